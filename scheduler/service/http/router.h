// Router: (method, path pattern) -> handler, for the daemon's HTTP endpoints.
//
// Patterns are absolute paths matched segment by segment:
//   "/api/v1/jobs"       the literal path (no trailing-slash folding: "/api/v1/jobs/" differs)
//   "/api/v1/jobs/{id}"  `{name}` matches one non-empty segment; params["id"] is decoded
//   "/static/*"          a final `*` matches the rest (zero or more segments); params["*"]
// When several patterns match, the most specific wins: compared segment by segment, a literal
// beats `{param}` beats `*`. HEAD is served by the GET route (the server drops the body).
// No matching path: 404; a matching path without the method: 405 with an Allow header. Both
// are error JSON (responses.h). A parameter that does not decode (bad %-escape) gets 400.
//
// Thread-safety: Add() before serving; Handle() is const and may run on any thread.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "service/http/request.h"

namespace phalanx::http {

using PathParams = std::map<std::string, std::string, std::less<>>;
using RouteHandler = std::function<Response(const Request&, const PathParams&)>;

class Router {
 public:
  // Fails (naming the pattern) on a method that is not an upper-case token, a pattern not
  // starting with '/', an empty or repeated {name}, a '*' that is not the whole last segment,
  // or a (method, pattern) already added.
  Status Add(std::string_view method, std::string_view pattern, RouteHandler handler);
  Status Get(std::string_view pattern, RouteHandler handler) { return Add("GET", pattern, std::move(handler)); }
  Status Post(std::string_view pattern, RouteHandler handler) { return Add("POST", pattern, std::move(handler)); }

  Response Handle(const Request& request) const;

  // The router as a Server handler; it moves into the handler (shared, immutable).
  Handler ToHandler() &&;

 private:
  enum class Kind { kLiteral = 0, kParam = 1, kRest = 2 };  // order = precedence
  struct Segment {
    Kind kind;
    std::string text;  // the literal, or the parameter's name
  };
  struct Route {
    std::string method;
    std::string pattern;
    std::vector<Segment> segments;
    RouteHandler handler;
  };
  // Whether `route` matches `path` (split into `segments`, views into it); fills `params`
  // (undecoded) and `rank` (one Kind per pattern segment: lower is more specific).
  static bool Match(const Route& route, std::string_view path, const std::vector<std::string_view>& segments,
                    std::vector<std::pair<std::string, std::string_view>>* params, std::vector<int>* rank);

  std::vector<Route> routes_;
};

}  // namespace phalanx::http
