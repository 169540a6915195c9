// Server: phalanxd's HTTP/1.1 endpoint (Boost.Beast), asynchronous on the daemon's io_context.
//
// Contract:
//  1. The handler is called on the io_context, one request at a time, with a complete request
//     (header and body read). It must not block: the same thread runs the scheduling core.
//  2. Connections are persistent (HTTP/1.1 keep-alive, HTTP/1.0 only with "Connection:
//     keep-alive"); pipelined requests are answered in order.
//  3. Bounded: a header over `max_header_bytes` gets 431, a body over `max_body_bytes` gets 413
//     (from Content-Length before the body is read, so no time is spent on it), a malformed
//     request or request target gets 400; each closes the connection after the reply. A
//     connection idle longer than `idle_timeout`, or slower than `header_timeout` to finish a
//     header (slowloris) or `body_timeout` to finish a body, is closed without a reply. Past
//     `max_connections`, new connections are closed at once.
//  4. A handler that throws gets 500 for that request; the server goes on.
//  5. HEAD is passed to the handler as "HEAD"; the reply keeps its Content-Length and drops its
//     body. The server adds Server and Content-Length; Date is not sent.
//  6. Stop() closes the listener and every connection; no handler runs after it returns, and
//     once the pending operations have finished (at once, as canceled) the io_context has no
//     work left from this server. The destructor calls Stop().
//
// Thread-safety: the io_context must be run by ONE thread (as in phalanxd). Start(), Stop(),
// the destructor and stats() must be called on that thread, or while the io_context is not
// running (from elsewhere: boost::asio::post(io, [&] { server->Stop(); })); port() and
// address() are constant after Start().
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>

#include "core/common/result.h"
#include "service/http/request.h"

namespace phalanx::http {

struct ServerOptions {
  size_t max_header_bytes = 16 * 1024;  // request line + headers
  size_t max_body_bytes = 64 * 1024;    // the daemon's API takes small JSON bodies at most
  size_t max_connections = 256;
  // Waiting for the first byte of a request (a new or kept-alive connection).
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(60)};
  // From the first byte of a request until its header is complete.
  std::chrono::milliseconds header_timeout{std::chrono::seconds(10)};
  std::chrono::milliseconds body_timeout{std::chrono::seconds(30)};
  std::chrono::milliseconds write_timeout{std::chrono::seconds(30)};
  // After an error reply (413, 400, ...) the unread rest of the request is read and dropped
  // this long at most before closing, so the client sees the reply rather than a reset.
  std::chrono::milliseconds linger_timeout{std::chrono::seconds(2)};
  std::string server_name = "phalanxd";
  // Event streams (Response::stream): at most this many open (each also counts as a
  // connection), each with at most this much queued unsent, and a comment line this often so
  // that proxies keep it open and a vanished reader is noticed.
  size_t max_streams = 32;
  size_t max_stream_queue_bytes = 4 * 1024 * 1024;
  std::chrono::milliseconds stream_keepalive{std::chrono::seconds(15)};
};

class Server {
 public:
  struct Stats {
    uint64_t accepted = 0;         // connections accepted (and served)
    uint64_t rejected = 0;         // connections closed at once: max_connections reached
    uint64_t active = 0;           // open connections now
    uint64_t requests = 0;         // requests passed to the handler
    uint64_t bad_requests = 0;     // answered by the server itself: 400, 413, 431
    uint64_t timeouts = 0;         // connections closed by a read or write timeout
    uint64_t streams = 0;          // event streams open now
    uint64_t streams_refused = 0;  // 503: max_streams reached
  };

  // Listens on `address` (an IP literal such as "127.0.0.1", "::1", "0.0.0.0", or
  // "localhost" for 127.0.0.1) and `port` (0: a free port; see port()). Fails, naming
  // "address:port", when the address does not parse or the socket cannot be bound.
  static Result<std::unique_ptr<Server>> Start(boost::asio::io_context& io, std::string address, uint16_t port,
                                               Handler handler, ServerOptions options = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t port() const { return port_; }
  // The bound endpoint, "127.0.0.1:8080" or "[::1]:8080".
  const std::string& address() const { return address_; }

  void Stop();  // idempotent
  Stats stats() const;

  struct State;  // shared with the connections; defined in server_state.h

 private:
  Server(std::shared_ptr<State> state, uint16_t port, std::string address);

  std::shared_ptr<State> state_;
  uint16_t port_;
  std::string address_;
};

}  // namespace phalanx::http
