// A minimal HTTP/1.1 client over Boost.Beast for the HTTP tests: one TCP connection, every
// operation bounded by a timeout (its own io_context, run until the operation completes), so a
// server bug fails a test instead of hanging it.
// Thread-safety: one thread per client. Movable.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "core/common/result.h"

namespace phalanx::http::testing {

using ClientResponse = boost::beast::http::response<boost::beast::http::string_body>;

class TestClient {
 public:
  TestClient() : io_(std::make_unique<boost::asio::io_context>()), stream_(*io_) {}
  // Connects to host:port (an IP literal).
  Status Connect(std::string_view host, uint16_t port, std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // Writes raw bytes.
  Status Write(std::string_view bytes, std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // Writes a request built from the arguments (Host and Content-Length added; HTTP/1.1).
  Status Send(std::string_view method, std::string_view target, std::string_view body = {},
              const std::vector<std::pair<std::string, std::string>>& headers = {});
  // Reads one response; `head`: it answers a HEAD request (no body follows).
  Result<ClientResponse> Read(bool head = false, std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // Send + Read.
  Result<ClientResponse> Fetch(std::string_view method, std::string_view target, std::string_view body = {},
                               const std::vector<std::pair<std::string, std::string>>& headers = {});
  // Reads and drops until the server closes the connection. Ok when it closed (end of stream
  // or reset) within `timeout`; the error says what happened otherwise.
  Status WaitClosed(std::chrono::milliseconds timeout);
  // Bytes the server sent that no Read() has consumed yet.
  size_t buffered() const { return buffer_.size(); }

 private:
  void Run();

  std::unique_ptr<boost::asio::io_context> io_;  // a pointer: clients can move
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::string host_;
};

// GET http://host:port/target with a fresh connection; the response or the error.
Result<ClientResponse> HttpGet(std::string_view host, uint16_t port, std::string_view target);

}  // namespace phalanx::http::testing
