// Internal to phalanxd's config reader (daemon_config.cc, daemon_config_sections.cc): the YAML
// walk whose errors name "file:line: section.key", the value conversions, and the readers of
// the sections that configure phalanxd's own parts (store, listeners, agents, Slurm mode,
// HTTP, history). Not an API.
// Thread-safety: none needed (a config is read once, on one thread).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "service/daemon_config.h"

namespace phalanx::service::detail {

// Walks one YAML map: every key must be known; values are converted with errors that name
// "file:line: section.key".
class Section {
 public:
  Section(const YAML::Node& node, std::string file, std::string prefix)
      : node_(node), file_(std::move(file)), prefix_(std::move(prefix)) {}

  using Handler = std::function<Status(const YAML::Node& value, const std::string& key)>;
  void On(std::string key, Handler h) { handlers_.emplace(std::move(key), std::move(h)); }

  Status Run() {
    if (!node_.IsMap()) return Fail(Where(node_), Name("") + "expected a map of settings");
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      const std::string key = it->first.as<std::string>();
      auto h = handlers_.find(key);
      if (h == handlers_.end()) {
        std::string known;
        for (const auto& [k, _] : handlers_) known += (known.empty() ? "" : ", ") + k;
        return Fail(Where(it->first), "unknown key '" + prefix_ + key + "' (known: " + known + ")");
      }
      if (auto st = h->second(it->second, prefix_ + key); !st) return st;
    }
    return {};
  }

  std::string Where(const YAML::Node& n) const { return file_ + ":" + std::to_string(n.Mark().line + 1); }
  std::string Name(const std::string& key) const { return key.empty() ? prefix_ : key + ": "; }
  const std::string& file() const { return file_; }

 private:
  // By value (a handle): a Section may be made from `it->second` of a YAML iterator, whose
  // proxy is gone at the end of that statement (ASan: stack-use-after-scope in ParseAccess).
  const YAML::Node node_;
  std::string file_, prefix_;
  std::map<std::string, Handler> handlers_;
};

inline std::string Scalar(const YAML::Node& n) { return n.IsScalar() ? n.Scalar() : std::string("<not a scalar>"); }

struct Conv {
  const Section& sec;
  Status Bad(const YAML::Node& v, const std::string& key, const std::string& what) const {
    return Fail(sec.Where(v), key + ": expected " + what + ", got '" + Scalar(v) + "'");
  }
  Status Str(const YAML::Node& v, const std::string& key, std::string* out) const {
    if (v.IsNull()) {
      out->clear();
      return {};
    }
    if (!v.IsScalar()) return Bad(v, key, "a string");
    *out = v.Scalar();
    return {};
  }
  Status Seconds(const YAML::Node& v, const std::string& key, double* out) const {
    double d = 0;
    if (!v.IsScalar() || !YAML::convert<double>::decode(v, d) || !std::isfinite(d) || d < 0)
      return Bad(v, key, "a number of seconds >= 0");
    *out = d;
    return {};
  }
  Status NonNegative(const YAML::Node& v, const std::string& key, double* out) const {
    double d = 0;
    if (!v.IsScalar() || !YAML::convert<double>::decode(v, d) || !std::isfinite(d) || d < 0)
      return Bad(v, key, "a number >= 0");
    *out = d;
    return {};
  }
  Status WholeSeconds(const YAML::Node& v, const std::string& key, Duration* out) const {
    int64_t x = 0;
    if (!v.IsScalar() || !YAML::convert<int64_t>::decode(v, x) || x < 0)
      return Bad(v, key, "a whole number of seconds >= 0");
    *out = x;
    return {};
  }
  Status U32(const YAML::Node& v, const std::string& key, uint32_t* out, uint32_t max = UINT32_MAX) const {
    int64_t x = 0;
    if (!v.IsScalar() || !YAML::convert<int64_t>::decode(v, x) || x < 0 || x > max)
      return Bad(v, key, "a whole number in 0.." + std::to_string(max));
    *out = static_cast<uint32_t>(x);
    return {};
  }
  Status Bool(const YAML::Node& v, const std::string& key, bool* out) const {
    if (!v.IsScalar() || !YAML::convert<bool>::decode(v, *out)) return Bad(v, key, "true or false");
    return {};
  }
};

// A list of names (users, groups, accounts, hosts): null keeps `out` as it is.
inline Status NameList(const Conv& cv, const YAML::Node& v, const std::string& key, std::vector<std::string>* out) {
  if (v.IsNull()) return {};
  if (!v.IsSequence()) return cv.Bad(v, key, "a list of names");
  out->clear();
  for (const YAML::Node& n : v) {
    if (!n.IsScalar() || n.Scalar().empty()) return cv.Bad(n, key, "a name");
    out->push_back(n.Scalar());
  }
  return {};
}

// The sections of phalanxd's own parts, each read into `c`; `v` is the section's value.
Status ParseUserLimits(const YAML::Node& v, const std::string& file, DaemonConfig& c);
Status ParseStore(const YAML::Node& v, const std::string& file, DaemonConfig& c);
Status ParseTopologySection(const YAML::Node& v, const std::string& file, DaemonConfig& c);
Status ParseUsersTcp(const YAML::Node& v, const std::string& file, DaemonConfig& c);
Status ParseAgents(const YAML::Node& v, const std::string& file, DaemonConfig& c);
Status ParseSlurm(const YAML::Node& v, const std::string& file, DaemonConfig& c);
Status ParseHttp(const YAML::Node& v, const std::string& file, DaemonConfig& c);
Status ParseHistory(const YAML::Node& v, const std::string& file, DaemonConfig& c);

}  // namespace phalanx::service::detail
