// phalanxd's HTTP request parsing: bytes off the socket through Beast's request parser with the
// server's limits (service/http/server.h), then what Connection::Dispatch does with a parsed
// request (the target split, the query decoded, the headers folded) and the Router's matching
// and parameter decoding over routes shaped like the daemon's.
#include <algorithm>
#include <cctype>

#include <boost/beast/core/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "fuzz_check.h"
#include "service/http/request.h"
#include "service/http/responses.h"
#include "service/http/router.h"
#include "service/http/server.h"
#include "service/http/url.h"

namespace {

const phalanx::http::Router& Routes() {
  using phalanx::http::PathParams;
  using phalanx::http::Request;
  using phalanx::http::Response;
  static const phalanx::http::Router* router = [] {
    auto* r = new phalanx::http::Router;
    auto echo = [](const Request& req, const PathParams& params) {
      Response out;
      out.body = req.path;
      for (const auto& [k, v] : params) out.body += " " + k + "=" + v;
      return out;
    };
    for (const char* p : {"/healthz", "/metrics", "/api/v1/jobs", "/api/v1/jobs/{id}", "/api/v1/jobs/{id}/events",
                          "/api/v1/nodes/{name}", "/static/*"}) {
      FUZZ_CHECK(r->Get(p, echo).has_value());
    }
    FUZZ_CHECK(r->Post("/api/v1/jobs/{id}/cancel", echo).has_value());
    return r;
  }();
  return *router;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace bhttp = boost::beast::http;
  using namespace phalanx::http;
  const ServerOptions defaults;
  bhttp::request_parser<bhttp::string_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(defaults.max_header_bytes));
  parser.body_limit(defaults.max_body_bytes);
  boost::beast::error_code ec;
  size_t used = 0;
  // Feed the bytes as the socket would, in pieces, until the message is done or refused.
  while (used < size && !parser.is_done()) {
    const size_t n = parser.put(boost::asio::buffer(data + used, size - used), ec);
    if (ec == bhttp::error::need_more) {
      ec = {};
      break;
    }
    if (ec) return 0;  // 400/413/431 in the server
    if (n == 0) break;
    used += n;
  }
  if (!parser.is_done()) return 0;
  auto message = parser.release();
  Request request;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  if (!request.target.starts_with('/')) return 0;
  SplitTarget split = Split(request.target);
  request.path = std::string(split.path);
  auto query = ParseQuery(split.query);
  if (!query) return phalanx::fuzz::CheckError(query.error()), 0;
  request.query = std::move(*query);
  for (const auto& field : message) {
    std::string name(field.name_string());
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    auto [it, inserted] = request.headers.try_emplace(std::move(name), std::string(field.value()));
    if (!inserted) (it->second += ", ") += std::string(field.value());
  }
  request.body = std::move(message.body());
  FUZZ_CHECK(request.body.size() <= defaults.max_body_bytes);
  const Response response = Routes().Handle(request);
  FUZZ_CHECK(response.status >= 200 && response.status <= 599);
  return 0;
}
