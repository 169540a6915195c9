// Request, Response and Handler: what phalanx::http::Server hands to the daemon and gets back.
// Plain values without Boost types, so handlers (and their tests) need no Beast headers.
// Thread-safety: plain values.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "service/http/url.h"

namespace phalanx::http {

struct Request {
  std::string method;  // as sent ("GET", "POST"; methods are case-sensitive)
  std::string target;  // as sent: "/api/v1/jobs?state=pending"
  std::string path;    // the target up to '?', NOT percent-decoded (the router decodes params)
  Query query;         // the query string, parsed and decoded ('+' is a space)
  // Header names lower-cased; a repeated header's values joined with ", " (RFC 9110 5.3).
  std::map<std::string, std::string, std::less<>> headers;
  std::string body;
  std::string remote;  // the peer, "127.0.0.1:53211" or "[::1]:53211"

  // The header's value, "" when absent. `name` must be lower-case.
  std::string_view Header(std::string_view name) const;
  // The first value of a query parameter; nullopt when absent.
  std::optional<std::string> QueryValue(std::string_view key) const;
  // Every value of a query parameter, in target order.
  std::vector<std::string> QueryValues(std::string_view key) const;
};

// A long-lived reply: Server-Sent Events (text/event-stream, WHATWG HTML 9.2). The server hands
// one to a Response's `stream` callback after it has sent the header; events go out in order.
// Thread-safety: the io_context's thread only.
class EventStream {
 public:
  virtual ~EventStream() = default;
  // Queues "event: <event>\ndata: <line>\n...\n\n" (`data` split at '\n'; '\r' dropped, as a
  // CR would end an SSE line). False when closed; a reader that falls more than the server's
  // `max_stream_queue_bytes` behind is closed (its EventSource reconnects).
  virtual bool Send(std::string_view event, std::string_view data) = 0;
  virtual bool closed() const = 0;
  virtual void Close() = 0;
};

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  // Extra headers ("Allow", "Cache-Control", ...). The server owns framing: Content-Length,
  // Transfer-Encoding and Connection given here are ignored.
  std::vector<std::pair<std::string, std::string>> headers;
  // Set (with status 200, to a GET): an event stream instead of `body`. The server sends the
  // header (content type text/event-stream, no Content-Length: the body runs until either side
  // closes), then calls `stream` once with the open stream. Past `max_streams` open streams
  // the request gets 503 instead; HEAD gets the header alone.
  std::function<void(std::shared_ptr<EventStream>)> stream;
};

// Called on the server's io_context thread, one request at a time: must not block.
using Handler = std::function<Response(const Request&)>;

}  // namespace phalanx::http
