#include "service/http/request.h"

namespace phalanx::http {

std::string_view Request::Header(std::string_view name) const {
  auto it = headers.find(name);
  return it == headers.end() ? std::string_view() : std::string_view(it->second);
}

std::optional<std::string> Request::QueryValue(std::string_view key) const {
  auto it = query.find(key);
  if (it == query.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> Request::QueryValues(std::string_view key) const {
  std::vector<std::string> out;
  auto [first, last] = query.equal_range(key);
  for (auto it = first; it != last; ++it) out.push_back(it->second);
  return out;
}

}  // namespace phalanx::http
