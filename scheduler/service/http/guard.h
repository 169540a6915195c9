// RequestGuard: the checks every request to phalanxd's HTTP side passes before any route
// (HttpEndpoints wraps the whole router in it, so pages added under "/" are covered too):
//  1. Host: the Host header's name (port and a trailing dot dropped, lower-cased; "[::1]" is
//     "::1") must be one of the allowed hosts; else 421 Misdirected Request (no Host header:
//     400). A browser page on another site that rebinds its DNS name to 127.0.0.1 sends its
//     own name here, so it is refused.
//  2. Origin: a request with an Origin header (cross-origin fetches, every POST) is refused
//     with 403 unless the origin is this server's own, "http://" or "https://" followed by
//     the Host header, or one of the allowed origins ("Origin: null" is never allowed).
//  3. Authorization: none: an anonymous reader (Admin() false); "Bearer <token>" equal, in
//     constant time, to the admin token: an admin (Admin() true); anything else, or a token
//     when none is configured: 401 with "WWW-Authenticate: Bearer".
// Refusals are error JSON (responses.h) naming the header and its value.
// Thread-safety: immutable after construction; Check and Admin are const and thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "service/http/request.h"

namespace phalanx::http {

struct GuardOptions {
  std::vector<std::string> hosts;    // allowed Host names (DefaultAllowedHosts plus configured ones)
  std::vector<std::string> origins;  // allowed Origins besides the server's own ("https://dash.example.com")
  std::string admin_token;           // empty: no admin view over HTTP
};

// localhost, 127.0.0.1, ::1, and `bound_host` unless it is a wildcard (0.0.0.0, ::) or empty.
std::vector<std::string> DefaultAllowedHosts(std::string_view bound_host);

// "Example.COM:8080" -> "example.com", "[::1]:80" -> "::1", "localhost." -> "localhost".
std::string HostName(std::string_view host_header);

class RequestGuard {
 public:
  explicit RequestGuard(GuardOptions options);

  // nullopt when the request may go on; else the refusal to send.
  std::optional<Response> Check(const Request& r) const;
  // Whether the request carries the admin token (call after Check passed).
  bool Admin(const Request& r) const;
  // `inner` behind Check.
  Handler Wrap(Handler inner) const;

 private:
  std::vector<std::string> hosts_;
  std::vector<std::string> origins_;
  std::string token_;
};

}  // namespace phalanx::http
