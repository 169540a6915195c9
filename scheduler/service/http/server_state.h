// Internal to phalanx_http: what Server shares with its connections. Lives until the last
// connection and the last pending accept are gone, so a Server may be destroyed while its
// connections still have operations in flight (they complete as canceled).
// Thread-safety: the io_context's one thread only.
#pragma once

#include <unordered_set>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "service/http/server.h"

namespace phalanx::http {

class Connection;

struct Server::State {
  State(boost::asio::io_context& io_context, Handler h, ServerOptions o)
      : io(io_context), acceptor(io_context), accept_retry(io_context), handler(std::move(h)), options(std::move(o)) {}

  boost::asio::io_context& io;
  boost::asio::ip::tcp::acceptor acceptor;
  boost::asio::steady_timer accept_retry;  // after an accept error (EMFILE, ...)
  const Handler handler;
  const ServerOptions options;
  bool stopped = false;
  std::unordered_set<Connection*> connections;  // open ones; each removes itself when destroyed
  Server::Stats stats;                          // stats.streams: open event streams
};

}  // namespace phalanx::http
