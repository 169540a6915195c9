#include "service/http/server.h"

#include <utility>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include "service/http/connection.h"
#include "service/http/server_state.h"

namespace phalanx::http {
namespace {

using boost::asio::ip::tcp;
using error_code = boost::system::error_code;

void Accept(const std::shared_ptr<Server::State>& state) {
  state->acceptor.async_accept([state](error_code ec, tcp::socket socket) {
    if (state->stopped) return;
    if (ec) {
      // Out of descriptors or memory, or an aborted handshake: try again shortly, not at once
      // (a tight loop would starve the io_context).
      state->accept_retry.expires_after(std::chrono::milliseconds(100));
      state->accept_retry.async_wait([state](error_code wait_ec) {
        if (!wait_ec && !state->stopped) Accept(state);
      });
      return;
    }
    if (state->connections.size() >= state->options.max_connections) {
      ++state->stats.rejected;
      error_code ignored;
      socket.close(ignored);
    } else {
      ++state->stats.accepted;
      std::make_shared<Connection>(state, std::move(socket))->Start();
    }
    Accept(state);
  });
}

std::string FormatEndpoint(const tcp::endpoint& ep) {
  std::string host = ep.address().to_string();
  if (ep.address().is_v6()) host = "[" + host + "]";
  return host + ":" + std::to_string(ep.port());
}

Status CheckOptions(const ServerOptions& o, const std::string& where) {
  using std::chrono::milliseconds;
  for (milliseconds t : {o.idle_timeout, o.header_timeout, o.body_timeout, o.write_timeout, o.linger_timeout}) {
    if (t <= milliseconds::zero()) return Fail(where, "HTTP server timeouts must be positive");
  }
  if (o.max_connections == 0) return Fail(where, "HTTP server max_connections must be positive");
  if (o.max_header_bytes < 256) return Fail(where, "HTTP server max_header_bytes below 256");
  if (o.max_stream_queue_bytes < 4096) return Fail(where, "HTTP server max_stream_queue_bytes below 4096");
  if (o.stream_keepalive.count() <= 0) return Fail(where, "HTTP server stream_keepalive must be positive");
  return {};
}

}  // namespace

Result<std::unique_ptr<Server>> Server::Start(boost::asio::io_context& io, std::string address, uint16_t port,
                                              Handler handler, ServerOptions options) {
  std::string where = address + ":" + std::to_string(port);
  if (!handler) return Fail(where, "HTTP server needs a handler");
  PHX_RETURN_IF_ERROR(CheckOptions(options, where));
  std::string host = address == "localhost" ? "127.0.0.1" : address;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  error_code ec;
  boost::asio::ip::address ip = boost::asio::ip::make_address(host, ec);
  if (ec) {
    return Fail(where,
                "HTTP listen address is not an IP address (use e.g. 127.0.0.1, ::1, "
                "0.0.0.0 or localhost)");
  }
  auto state = std::make_shared<State>(io, std::move(handler), std::move(options));
  tcp::endpoint endpoint(ip, port);
  state->acceptor.open(endpoint.protocol(), ec);
  if (ec) return Fail(where, "HTTP socket: " + ec.message());
  state->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (ec) return Fail(where, "HTTP socket option SO_REUSEADDR: " + ec.message());
  state->acceptor.bind(endpoint, ec);
  if (ec) return Fail(where, "HTTP bind: " + ec.message());
  state->acceptor.listen(boost::asio::socket_base::max_listen_connections, ec);
  if (ec) return Fail(where, "HTTP listen: " + ec.message());
  tcp::endpoint local = state->acceptor.local_endpoint(ec);
  if (ec) return Fail(where, "HTTP local endpoint: " + ec.message());
  Accept(state);
  return std::unique_ptr<Server>(new Server(state, local.port(), FormatEndpoint(local)));
}

Server::Server(std::shared_ptr<State> state, uint16_t port, std::string address)
    : state_(std::move(state)), port_(port), address_(std::move(address)) {}

Server::~Server() { Stop(); }

void Server::Stop() {
  if (state_->stopped) return;
  state_->stopped = true;
  error_code ignored;
  state_->acceptor.close(ignored);
  state_->accept_retry.cancel();
  std::vector<Connection*> open(state_->connections.begin(), state_->connections.end());
  for (Connection* connection : open) connection->Close();
}

Server::Stats Server::stats() const { return state_->stats; }

}  // namespace phalanx::http
