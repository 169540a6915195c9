#include "service/http/connection.h"

#include <algorithm>
#include <cctype>
#include <exception>
#include <utility>

#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include "service/http/responses.h"
#include "service/http/url.h"

namespace phalanx::http {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using boost::asio::ip::tcp;

std::string FormatEndpoint(const tcp::endpoint& ep) {
  std::string host = ep.address().to_string();
  if (ep.address().is_v6()) host = "[" + host + "]";
  return host + ":" + std::to_string(ep.port());
}

bool HasLineBreakOrNul(std::string_view s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos;
}

// Whether a handler's extra header may be sent: one that would break the framing, or that the
// server sets itself, is dropped.
bool AllowedHeader(const std::string& name, const std::string& value) {
  if (name.empty() || HasLineBreakOrNul(name) || HasLineBreakOrNul(value) ||
      name.find_first_of(" \t:") != std::string::npos) {
    return false;
  }
  return !beast::iequals(name, "content-length") && !beast::iequals(name, "transfer-encoding") &&
         !beast::iequals(name, "connection");
}

// One SSE field line per line of `text` ("data: a\ndata: b\n"); CRs dropped.
void AppendField(std::string* out, std::string_view field, std::string_view text) {
  size_t start = 0;
  while (true) {
    const size_t end = text.find('\n', start);
    std::string_view line = text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    *out += field;
    *out += ": ";
    for (char c : line) {
      if (c != '\r') *out += c;
    }
    *out += '\n';
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
}

// A malformed request (answered with 400), as opposed to the peer closing or a socket error.
bool IsParseError(boost::system::error_code ec) {
  static const boost::system::error_category& http_errors = bhttp::make_error_code(bhttp::error::bad_target).category();
  return ec && ec.category() == http_errors && ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message;
}

}  // namespace

Connection::Connection(std::shared_ptr<Server::State> state, tcp::socket socket)
    : state_(std::move(state)),
      stream_(std::move(socket)),
      // Room for a whole header plus one read; the parser's limits bound what is kept.
      buffer_(state_->options.max_header_bytes + 64 * 1024) {
  error_code ec;
  tcp::endpoint peer = stream_.socket().remote_endpoint(ec);
  remote_ = ec ? "unknown" : FormatEndpoint(peer);
  stream_.socket().set_option(tcp::no_delay(true), ec);
  state_->connections.insert(this);
  state_->stats.active = state_->connections.size();
}

Connection::~Connection() {
  state_->connections.erase(this);
  state_->stats.active = state_->connections.size();
}

void Connection::Close() {
  if (closed_) return;
  closed_ = true;
  if (streaming_) --state_->stats.streams;
  if (keepalive_) keepalive_->cancel();
  stream_.close();  // cancels the pending operation and the timer
  // Closed: no longer open, even while an event stream's holder keeps the object.
  state_->connections.erase(this);
  state_->stats.active = state_->connections.size();
}

void Connection::Fail(error_code ec, bool count_timeout) {
  if (count_timeout && ec == beast::error::timeout) ++state_->stats.timeouts;
  Close();
}

void Connection::ReadRequest() {
  if (Done()) return Close();
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(std::min<size_t>(state_->options.max_header_bytes, UINT32_MAX)));
  // No body limit while the header is read, so that OnHeader can answer an oversized
  // Content-Length with 413 naming it; the limit is set before the body is read. (Not
  // boost::none: Beast 1.74 compares `len > body_limit_` with an optional, and every length
  // is greater than none.)
  parser_->body_limit(UINT64_MAX);
  if (buffer_.size() > 0) return ReadHeader();  // pipelined: the next request is here already
  // Idle: wait for the first byte under idle_timeout; the header's clock starts with it.
  stream_.expires_after(state_->options.idle_timeout);
  stream_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](error_code ec, size_t n) {
    if (self->Done()) return self->Close();
    if (ec) return self->Fail(ec, /*count_timeout=*/false);
    self->buffer_.commit(n);
    self->ReadHeader();
  });
}

void Connection::ReadHeader() {
  stream_.expires_after(state_->options.header_timeout);
  bhttp::async_read_header(stream_, buffer_, *parser_,
                           [self = shared_from_this()](error_code ec, size_t) { self->OnHeader(ec); });
}

void Connection::OnHeader(error_code ec) {
  if (Done()) return Close();
  if (ec == bhttp::error::body_limit) {  // not expected (no limit yet), but it is a 413
    return ReplyError(413, "request body larger than " + std::to_string(state_->options.max_body_bytes) + " bytes");
  }
  if (ec == bhttp::error::header_limit || ec == bhttp::error::buffer_overflow) {
    return ReplyError(431, "request header larger than " + std::to_string(state_->options.max_header_bytes) + " bytes");
  }
  if (IsParseError(ec)) return ReplyError(400, "malformed request: " + ec.message());
  // Closed by the peer, too slow (slowloris), or a socket error: nothing to answer.
  if (ec) return Fail(ec, /*count_timeout=*/true);
  const auto& header = parser_->get();
  version_ = header.version();
  if (auto length = parser_->content_length(); length && *length > state_->options.max_body_bytes) {
    return ReplyError(413, "request body of " + std::to_string(*length) + " bytes is larger than " +
                               std::to_string(state_->options.max_body_bytes));
  }
  parser_->body_limit(state_->options.max_body_bytes);  // also bounds chunked bodies
  if (parser_->is_done()) return Dispatch();
  if (version_ >= 11 && beast::iequals(header[bhttp::field::expect], "100-continue")) {
    continue_ = {};
    continue_.version(11);
    continue_.result(bhttp::status::continue_);
    stream_.expires_after(state_->options.write_timeout);
    return bhttp::async_write(stream_, continue_, [self = shared_from_this()](error_code ec, size_t) {
      if (self->Done()) return self->Close();
      if (ec) return self->Fail(ec, true);
      self->ReadBody();
    });
  }
  ReadBody();
}

void Connection::ReadBody() {
  stream_.expires_after(state_->options.body_timeout);
  bhttp::async_read(stream_, buffer_, *parser_,
                    [self = shared_from_this()](error_code ec, size_t) { self->OnBody(ec); });
}

void Connection::OnBody(error_code ec) {
  if (Done()) return Close();
  if (ec == bhttp::error::body_limit) {
    return ReplyError(413, "request body larger than " + std::to_string(state_->options.max_body_bytes) + " bytes");
  }
  if (IsParseError(ec)) return ReplyError(400, "malformed request: " + ec.message());
  if (ec) return Fail(ec, /*count_timeout=*/true);
  Dispatch();
}

void Connection::Dispatch() {
  bhttp::request<bhttp::string_body> message = parser_->release();
  bool keep_alive = message.keep_alive();
  Request request;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  if (!request.target.starts_with('/')) {
    return ReplyError(400, "request target must be a path starting with '/'");
  }
  SplitTarget split = Split(request.target);
  request.path = std::string(split.path);
  auto query = ParseQuery(split.query);
  if (!query) return ReplyError(400, "bad query string: " + query.error().ToString());
  request.query = std::move(*query);
  for (const auto& field : message) {
    std::string name(field.name_string());
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::string_view value(field.value().data(), field.value().size());
    auto [it, inserted] = request.headers.try_emplace(std::move(name), value);
    if (!inserted) (it->second += ", ") += value;
  }
  request.body = std::move(message.body());
  request.remote = remote_;
  ++state_->stats.requests;

  Response response;
  try {
    response = state_->handler(request);
  } catch (const std::exception& e) {
    response = ErrorResponse(500, std::string("internal error: ") + e.what());
  } catch (...) {
    response = ErrorResponse(500, "internal error");
  }
  if (Done()) return Close();  // the handler stopped the server
  if (response.stream && response.status == 200 && request.method == "GET") return StartStream(std::move(response));
  if (response.stream && response.status == 200 && request.method == "HEAD") {
    response.content_type = "text/event-stream";
    response.body.clear();
  }
  Reply(std::move(response), keep_alive, request.method == "HEAD");
}

void Connection::ReplyError(int status, std::string message) {
  ++state_->stats.bad_requests;
  Reply(ErrorResponse(status, message), /*keep_alive=*/false, /*head=*/false);
}

void Connection::Reply(Response response, bool keep_alive, bool head) {
  if (response.status < 200 || response.status > 599) {
    response = ErrorResponse(500, "handler returned status " + std::to_string(response.status));
  }
  response_ = {};
  response_.version(version_);
  response_.result(static_cast<unsigned>(response.status));
  response_.set(bhttp::field::server, state_->options.server_name);
  bool no_body = response.status == 204 || response.status == 304;
  if (!no_body && !response.content_type.empty()) {
    response_.set(bhttp::field::content_type, response.content_type);
  }
  for (const auto& [name, value] : response.headers) {
    if (AllowedHeader(name, value)) response_.insert(name, value);
  }
  if (!no_body) response_.body() = std::move(response.body);
  response_.keep_alive(keep_alive);
  response_.prepare_payload();         // Content-Length (none for 204 and 304)
  if (head) response_.body().clear();  // HEAD: the length of the body it would have had

  stream_.expires_after(state_->options.write_timeout);
  bhttp::async_write(stream_, response_, [self = shared_from_this(), close = !keep_alive](error_code ec, size_t) {
    self->OnWrite(ec, close);
  });
}

void Connection::OnWrite(error_code ec, bool close) {
  if (Done()) return Close();
  if (ec) return Fail(ec, /*count_timeout=*/true);
  if (close) return Linger();
  ReadRequest();
}

void Connection::Linger() {
  // Half-close, then read and drop what the client still sends (the rest of a refused body,
  // pipelined requests) until it closes or linger_timeout passes. Closing with unread data
  // would send a reset, which can destroy the reply before the client reads it.
  error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  stream_.expires_after(state_->options.linger_timeout);
  Drain();
}

void Connection::Drain() {
  stream_.async_read_some(boost::asio::buffer(drain_), [self = shared_from_this()](error_code ec, size_t) {
    if (ec || self->Done()) return self->Close();
    self->Drain();
  });
}

// ---- event streams -------------------------------------------------------------------------

void Connection::StartStream(Response response) {
  if (state_->stats.streams >= state_->options.max_streams) {
    ++state_->stats.streams_refused;
    return Reply(ErrorResponse(503, "too many event streams open (max_streams " +
                                        std::to_string(state_->options.max_streams) + "); try again later"),
                 /*keep_alive=*/false, /*head=*/false);
  }
  streaming_ = true;
  ++state_->stats.streams;
  // The body runs until the connection closes: no Content-Length, and "Connection: close"
  // says so (RFC 9112 6.3); the client's side is not read for requests any more.
  std::string header = version_ >= 11 ? "HTTP/1.1 200 OK\r\n" : "HTTP/1.0 200 OK\r\n";
  header += "Server: " + state_->options.server_name + "\r\n";
  header += "Content-Type: text/event-stream\r\nCache-Control: no-store\r\n";
  for (const auto& [name, value] : response.headers) {
    if (AllowedHeader(name, value) && !beast::iequals(name, "content-type") && !beast::iequals(name, "cache-control"))
      header += name + ": " + value + "\r\n";
  }
  header += "Connection: close\r\n\r\n";
  header += "retry: 2000\n\n";  // an EventSource reconnects after 2 s
  Queue(std::move(header));
  keepalive_.emplace(stream_.get_executor());
  Keepalive();
  WatchPeer();
  response.stream(shared_from_this());
}

bool Connection::Send(std::string_view event, std::string_view data) {
  if (Done() || !streaming_) return false;
  std::string text;
  if (!event.empty()) AppendField(&text, "event", event.substr(0, event.find_first_of("\r\n")));
  AppendField(&text, "data", data);
  text += '\n';
  return Queue(std::move(text));
}

bool Connection::Queue(std::string text) {
  if (Done()) return false;
  if (queued_bytes_ + text.size() > state_->options.max_stream_queue_bytes) {
    Close();  // a reader this far behind starts again (its EventSource reconnects)
    return false;
  }
  queued_bytes_ += text.size();
  queue_.push_back(std::move(text));
  Flush();
  return true;
}

void Connection::Flush() {
  if (writing_ || queue_.empty() || Done()) return;
  writing_ = true;
  stream_.expires_after(state_->options.write_timeout);
  boost::asio::async_write(stream_, boost::asio::buffer(queue_.front()),
                           [self = shared_from_this()](error_code ec, size_t) {
    self->writing_ = false;
    if (self->Done()) return self->Close();
    if (ec) return self->Fail(ec, /*count_timeout=*/true);
    self->queued_bytes_ -= self->queue_.front().size();
    self->queue_.pop_front();
    self->Flush();
  });
}

void Connection::WatchPeer() {
  // Straight on the socket (no timeout: the stream may be quiet for hours); whatever the
  // client sends is dropped, and its close (or an error) closes the stream.
  stream_.socket().async_read_some(boost::asio::buffer(drain_), [self = shared_from_this()](error_code ec, size_t) {
    if (ec || self->Done()) return self->Close();
    self->WatchPeer();
  });
}

void Connection::Keepalive() {
  keepalive_->expires_after(state_->options.stream_keepalive);
  keepalive_->async_wait([self = shared_from_this()](error_code ec) {
    if (ec || self->Done()) return;
    if (self->Queue(": keep-alive\n\n")) self->Keepalive();
  });
}

}  // namespace phalanx::http
