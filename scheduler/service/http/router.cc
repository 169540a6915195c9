#include "service/http/router.h"

#include <memory>
#include <set>
#include <utility>

#include "service/http/responses.h"
#include "service/http/url.h"
#include "util/strings.h"

namespace phalanx::http {
namespace {

// "/a/b/" -> {"a", "b", ""}; "/" -> {""}. `path` starts with '/'.
std::vector<std::string_view> SplitPath(std::string_view path) { return ::phalanx::Split(path.substr(1), '/'); }

bool IsParamName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

Status Router::Add(std::string_view method, std::string_view pattern, RouteHandler handler) {
  std::string where = std::string(method) + " " + std::string(pattern);
  if (method.empty()) return Fail(where, "empty method");
  for (char c : method) {
    if (c < 'A' || c > 'Z') return Fail(where, "method must be an upper-case token");
  }
  if (!handler) return Fail(where, "no handler");
  if (!pattern.starts_with('/')) return Fail(where, "pattern must start with '/'");
  Route route{std::string(method), std::string(pattern), {}, std::move(handler)};
  std::vector<std::string_view> parts = SplitPath(pattern);
  std::set<std::string_view> names;
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string_view part = parts[i];
    if (part == "*") {
      if (i + 1 != parts.size()) return Fail(where, "'*' must be the last segment");
      route.segments.push_back({Kind::kRest, "*"});
    } else if (part.starts_with('{') && part.ends_with('}') && part.size() >= 2) {
      std::string_view name = part.substr(1, part.size() - 2);
      if (!IsParamName(name)) {
        return Fail(where, "parameter name '" + std::string(name) + "' must match [A-Za-z0-9_]+");
      }
      if (!names.insert(name).second) {
        return Fail(where, "parameter {" + std::string(name) + "} repeats");
      }
      route.segments.push_back({Kind::kParam, std::string(name)});
    } else if (part.find_first_of("{}*") != std::string_view::npos) {
      return Fail(where, "segment '" + std::string(part) + "' mixes text with '{', '}' or '*' (use a whole segment)");
    } else {
      route.segments.push_back({Kind::kLiteral, std::string(part)});
    }
  }
  // Two patterns of one shape (equal literals, params in the same places) would be ambiguous.
  auto same_shape = [&](const Route& other) {
    if (other.method != route.method || other.segments.size() != route.segments.size()) {
      return false;
    }
    for (size_t i = 0; i < route.segments.size(); ++i) {
      const Segment& a = route.segments[i];
      const Segment& b = other.segments[i];
      if (a.kind != b.kind || (a.kind == Kind::kLiteral && a.text != b.text)) return false;
    }
    return true;
  };
  for (const Route& other : routes_) {
    if (same_shape(other)) return Fail(where, "same route as " + other.pattern);
  }
  routes_.push_back(std::move(route));
  return {};
}

bool Router::Match(const Route& route, std::string_view path, const std::vector<std::string_view>& segments,
                   std::vector<std::pair<std::string, std::string_view>>* params, std::vector<int>* rank) {
  params->clear();
  rank->clear();
  size_t i = 0;
  for (const Segment& segment : route.segments) {
    rank->push_back(static_cast<int>(segment.kind));
    if (segment.kind == Kind::kRest) {
      std::string_view rest;
      if (i < segments.size()) rest = path.substr(segments[i].data() - path.data());
      params->emplace_back("*", rest);
      return true;
    }
    if (i >= segments.size()) return false;
    if (segment.kind == Kind::kLiteral) {
      if (segments[i] != segment.text) return false;
    } else {
      if (segments[i].empty()) return false;
      params->emplace_back(segment.text, segments[i]);
    }
    ++i;
  }
  return i == segments.size();
}

Response Router::Handle(const Request& request) const {
  if (!request.path.starts_with('/')) return ErrorResponse(404, "no such endpoint");
  std::vector<std::string_view> segments = SplitPath(request.path);
  std::vector<std::pair<std::string, std::string_view>> params, best_params;
  std::vector<int> rank, best_rank;
  const Route* best = nullptr;
  std::set<std::string> allowed;  // methods of every route whose pattern matches the path
  auto find = [&](std::string_view method) {
    for (const Route& route : routes_) {
      if (!Match(route, request.path, segments, &params, &rank)) continue;
      allowed.insert(route.method);
      if (route.method != method) continue;
      if (best == nullptr || rank < best_rank) {
        best = &route;
        best_rank = rank;
        best_params = params;
      }
    }
  };
  find(request.method);
  if (best == nullptr && request.method == "HEAD") find("GET");
  if (best == nullptr) {
    if (allowed.empty()) return ErrorResponse(404, "no such endpoint: " + request.path);
    if (allowed.contains("GET")) allowed.insert("HEAD");
    std::string allow;
    for (const std::string& m : allowed) allow += (allow.empty() ? "" : ", ") + m;
    Response out = ErrorResponse(
        405, "method " + request.method + " not allowed for " + request.path + " (allowed: " + allow + ")");
    out.headers.emplace_back("Allow", allow);
    return out;
  }
  PathParams decoded;
  for (const auto& [name, raw] : best_params) {
    auto value = PercentDecode(raw, /*plus_is_space=*/false);
    if (!value) return ErrorResponse(400, "bad path: " + value.error().ToString());
    decoded.emplace(name, std::move(*value));
  }
  return best->handler(request, decoded);
}

Handler Router::ToHandler() && {
  auto router = std::make_shared<const Router>(std::move(*this));
  return [router](const Request& request) { return router->Handle(request); };
}

}  // namespace phalanx::http
