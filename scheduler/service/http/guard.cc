#include "service/http/guard.h"

#include <algorithm>
#include <cctype>
#include <memory>

#include "service/http/responses.h"

namespace phalanx::http {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Equal strings, in time independent of where they differ (only the length may show).
bool SameSecret(std::string_view a, std::string_view b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

constexpr std::string_view kBearer = "Bearer ";

// A header value as it may appear in a message: at most 200 bytes, control bytes as '?'.
std::string Shown(std::string_view v) {
  std::string out(v.substr(0, 200));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

}  // namespace

std::vector<std::string> DefaultAllowedHosts(std::string_view bound_host) {
  std::vector<std::string> hosts = {"localhost", "127.0.0.1", "::1"};
  const std::string b = HostName(bound_host);
  if (!b.empty() && b != "0.0.0.0" && b != "::" && std::find(hosts.begin(), hosts.end(), b) == hosts.end())
    hosts.push_back(b);
  return hosts;
}

std::string HostName(std::string_view h) {
  std::string_view name = h;
  if (name.starts_with("[")) {
    const size_t end = name.find(']');
    name = end == std::string_view::npos ? name.substr(1) : name.substr(1, end - 1);
  } else if (const size_t colon = name.find(':'); colon != std::string_view::npos) {
    // One colon: host:port. More than one without brackets: a bare IPv6 literal.
    if (name.find(':', colon + 1) == std::string_view::npos) name = name.substr(0, colon);
  }
  if (name.ends_with(".")) name.remove_suffix(1);
  return Lower(name);
}

RequestGuard::RequestGuard(GuardOptions options)
    : hosts_(std::move(options.hosts)), origins_(std::move(options.origins)), token_(std::move(options.admin_token)) {
  for (std::string& h : hosts_) h = HostName(h);
  for (std::string& o : origins_) o = Lower(o);
}

std::optional<Response> RequestGuard::Check(const Request& r) const {
  auto host = r.headers.find("host");
  if (host == r.headers.end() || host->second.empty()) return ErrorResponse(400, "Host: the header is missing");
  const std::string name = HostName(host->second);
  if (std::find(hosts_.begin(), hosts_.end(), name) == hosts_.end())
    return ErrorResponse(421, "Host: '" + Shown(host->second) +
                                  "' is not a name of this server (allowed: localhost, 127.0.0.1, ::1, the bound "
                                  "address and http.allowed_hosts)");
  if (auto origin = r.headers.find("origin"); origin != r.headers.end()) {
    const std::string o = Lower(origin->second);
    const std::string own = Lower(host->second);
    const bool same = o == "http://" + own || o == "https://" + own;
    if (!same && std::find(origins_.begin(), origins_.end(), o) == origins_.end())
      return ErrorResponse(
          403, "Origin: '" + Shown(origin->second) + "' is not this server's origin nor one of http.allowed_origins");
  }
  if (auto auth = r.headers.find("authorization"); auth != r.headers.end()) {
    const std::string_view v = auth->second;
    std::string why;
    if (token_.empty()) why = "no admin token is configured (http.admin_token_file)";
    else if (!v.starts_with(kBearer)) why = "expected 'Bearer <token>'";
    else if (!SameSecret(v.substr(kBearer.size()), token_)) why = "invalid admin token";
    if (!why.empty()) {
      Response resp = ErrorResponse(401, "Authorization: " + why);
      resp.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"phalanxd\"");
      return resp;
    }
  }
  return std::nullopt;
}

bool RequestGuard::Admin(const Request& r) const {
  if (token_.empty()) return false;
  auto auth = r.headers.find("authorization");
  if (auth == r.headers.end()) return false;
  const std::string_view v = auth->second;
  return v.starts_with(kBearer) && SameSecret(v.substr(kBearer.size()), token_);
}

Handler RequestGuard::Wrap(Handler inner) const {
  return [guard = std::make_shared<const RequestGuard>(*this), inner = std::move(inner)](const Request& r) {
    if (auto refusal = guard->Check(r)) return *refusal;
    return inner(r);
  };
}

}  // namespace phalanx::http
