// Internal to phalanx_http: one accepted TCP connection. Reads requests (idle, header and body
// timeouts; header and body limits), calls the handler, writes replies, keeps the connection
// alive or closes it (lingering: the unread rest of a refused request is drained first), or
// turns into an event stream (Response::stream) until either side closes it.
// Owned by its pending asynchronous operation (shared_from_this), and as an event stream also
// by whoever holds the EventStream; it leaves the server's open set when it closes.
// Thread-safety: the io_context's one thread only.
#pragma once

#include <array>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "service/http/server_state.h"

namespace phalanx::http {

class Connection : public std::enable_shared_from_this<Connection>, public EventStream {
 public:
  Connection(std::shared_ptr<Server::State> state, boost::asio::ip::tcp::socket socket);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void Start() { ReadRequest(); }
  void Close() override;  // cancels whatever is pending; idempotent

  // EventStream (after Response::stream)
  bool Send(std::string_view event, std::string_view data) override;
  bool closed() const override { return Done(); }

 private:
  using error_code = boost::system::error_code;

  void ReadRequest();
  void ReadHeader();
  void OnHeader(error_code ec);
  void ReadBody();
  void OnBody(error_code ec);
  void Dispatch();
  // Writes `response`; `keep_alive` false closes the connection after it.
  void Reply(Response response, bool keep_alive, bool head);
  void ReplyError(int status, std::string message);
  void OnWrite(error_code ec, bool close);
  // Event streams: the header, then queued events written one at a time; the peer's side is
  // read only to notice it closing; a comment every stream_keepalive.
  void StartStream(Response response);
  bool Queue(std::string text);
  void Flush();
  void WatchPeer();
  void Keepalive();
  void Linger();
  void Drain();
  // Closes after a failed read or write (counting timeouts).
  void Fail(error_code ec, bool count_timeout);
  bool Done() const { return closed_ || state_->stopped; }

  std::shared_ptr<Server::State> state_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  unsigned version_ = 11;  // of the request being answered
  boost::beast::http::response<boost::beast::http::string_body> response_;
  boost::beast::http::response<boost::beast::http::empty_body> continue_;
  std::array<char, 4096> drain_{};
  std::string remote_;
  bool closed_ = false;
  bool streaming_ = false;
  bool writing_ = false;
  std::deque<std::string> queue_;  // event stream text not yet written (front: being written)
  size_t queued_bytes_ = 0;
  std::optional<boost::asio::steady_timer> keepalive_;
};

}  // namespace phalanx::http
