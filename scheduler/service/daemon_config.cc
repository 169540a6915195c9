#include "service/daemon_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <utility>

#include "call_auth.h"
#include "service/store_space.h"
#include "util/duration.h"
#include "util/file_read.h"
#include "util/flags.h"
#include "util/hostlist.h"
#include "util/job_array.h"
#include "util/job_fields.h"

namespace phalanx::service {
namespace {

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

// A policy preset keeps the partitions already read (the YAML keys come in any order).
SchedulerConfig WithPartitions(SchedulerConfig preset, const std::vector<PartitionConfig>& partitions) {
  preset.partitions = partitions;
  return preset;
}

std::string Scalar(const YAML::Node& n) { return n.IsScalar() ? n.Scalar() : std::string("<not a scalar>"); }

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
Status NameList(const Conv& cv, const YAML::Node& v, const std::string& key, std::vector<std::string>* out) {
  if (v.IsNull()) return {};
  if (!v.IsSequence()) return cv.Bad(v, key, "a list of names");
  out->clear();
  for (const YAML::Node& n : v) {
    if (!n.IsScalar() || n.Scalar().empty()) return cv.Bad(n, key, "a name");
    out->push_back(n.Scalar());
  }
  return {};
}

// access: classes and accounts (core/queue/access.h).
Status ParseAccess(const YAML::Node& node, const std::string& file, AccessConfig& a) {
  Section s(node, file, "access.");
  Conv cv{s};
  const auto rules = [&file](const YAML::Node& v, const std::string& key, bool accounts,
                             std::map<std::string, AccessList>* out) -> Status {
    if (v.IsNull()) return {};
    Section names(v, file, key + ".");
    std::vector<std::string> seen;
    if (!v.IsMap()) return Fail(names.Where(v), key + ": expected a map of names to rules");
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string name = it->first.as<std::string>();
      Section r(it->second, file, key + "." + name + ".");
      Conv rc{r};
      AccessList& list = (*out)[name];
      r.On("users", [&](const YAML::Node& x, const std::string& k) { return NameList(rc, x, k, &list.users); });
      r.On("groups", [&](const YAML::Node& x, const std::string& k) { return NameList(rc, x, k, &list.groups); });
      if (accounts)
        r.On("accounts", [&](const YAML::Node& x, const std::string& k) { return NameList(rc, x, k, &list.accounts); });
      if (it->second.IsNull()) continue;  // "high:" alone: admins only
      if (auto st = r.Run(); !st) return st;
    }
    return {};
  };
  s.On("classes", [&](const YAML::Node& v, const std::string& key) { return rules(v, key, true, &a.classes); });
  s.On("accounts", [&](const YAML::Node& v, const std::string& key) { return rules(v, key, false, &a.accounts); });
  s.On("unlisted_accounts", [&](const YAML::Node& v, const std::string& key) -> Status {
    const std::string m = Scalar(v);
    if (m == "allow") a.unlisted_accounts_open = true;
    else if (m == "deny") a.unlisted_accounts_open = false;
    else return cv.Bad(v, key, "allow or deny");
    return {};
  });
  s.On("default_accounts", [&](const YAML::Node& v, const std::string& key) -> Status {
    if (v.IsNull()) return {};
    if (!v.IsMap()) return Fail(s.Where(v), key + ": expected a map of user names to accounts");
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string user = it->first.as<std::string>();
      if (!it->second.IsScalar() || it->second.Scalar().empty())
        return cv.Bad(it->second, key + "." + user, "an account name");
      a.default_accounts[user] = it->second.Scalar();
    }
    return {};
  });
  return s.Run();
}

Status ParseScheduler(const YAML::Node& node, const std::string& file, DaemonConfig& c) {
  // The preset first: the knobs below change it.
  if (node.IsMap() && node["policy"]) {
    const YAML::Node p = node["policy"];
    auto preset = PolicyPreset(Scalar(p));
    if (!preset)
      return Fail(file + ":" + std::to_string(p.Mark().line + 1), "scheduler.policy: " + preset.error().message);
    c.policy = Scalar(p);
    c.scheduler = WithPartitions(*preset, c.scheduler.partitions);
  }
  Section s(node, file, "scheduler.");
  Conv cv{s};
  SchedulerConfig& k = c.scheduler;
  s.On("policy", [](const YAML::Node&, const std::string&) -> Status { return {}; });
  // Knobs of the core's SchedulerConfig, parsed by the core itself (SetConfigOption).
  for (const char* name : {"order", "backfill", "reserve_depth", "reserve_large_gpus", "placement", "preemption",
                           "elastic", "best_fit", "whole_node_reservations", "reserve_larger", "node_fit_tolerance",
                           "runtime", "placement_comm_share", "patience_depth"}) {
    s.On(name, [&k, &s, name](const YAML::Node& v, const std::string& key) -> Status {
      std::string x = Scalar(v);
      if (x == "yes") x = "on";
      if (x == "no") x = "off";
      if (auto st = SetConfigOption(k, name, x); !st) return Fail(s.Where(v), key + ": " + st.error().message);
      return {};
    });
  }
  // Attained-service order (order: attained): thresholds in GPU-seconds, a list or "T1/T2/...".
  s.On("service_queues", [&k, &s](const YAML::Node& v, const std::string& key) -> Status {
    std::string x;
    if (v.IsSequence()) {
      for (const YAML::Node& t : v) x += (x.empty() ? "" : "/") + Scalar(t);
    } else {
      x = Scalar(v);
    }
    if (auto st = SetConfigOption(k, "service_queues", x); !st)
      return Fail(s.Where(v), key + ": " + st.error().message);
    return {};
  });
  s.On("service_min_run",
       [&](const YAML::Node& v, const std::string& key) { return cv.WholeSeconds(v, key, &k.service_min_run); });
  s.On("reserve_after_wait",
       [&](const YAML::Node& v, const std::string& key) { return cv.WholeSeconds(v, key, &k.reserve_after_wait); });
  s.On("charge_period",
       [&](const YAML::Node& v, const std::string& key) { return cv.WholeSeconds(v, key, &k.charge_period); });
  s.On("checkpoint_grace",
       [&](const YAML::Node& v, const std::string& key) { return cv.WholeSeconds(v, key, &k.checkpoint_grace); });
  s.On("periodic_checkpoint",
       [&](const YAML::Node& v, const std::string& key) { return cv.WholeSeconds(v, key, &k.periodic_checkpoint); });
  s.On("grow_after_idle",
       [&](const YAML::Node& v, const std::string& key) { return cv.WholeSeconds(v, key, &k.grow_after_idle); });
  // One value for every priority class's minimum runtime before a checkpoint preemption.
  s.On("min_runtime_before_preemption", [&](const YAML::Node& v, const std::string& key) -> Status {
    Duration d = 0;
    if (auto st = cv.WholeSeconds(v, key, &d); !st) return st;
    for (auto& cls : k.classes.classes) cls.min_runtime_before_preemption = d;
    return {};
  });
  s.On("default_walltime",
       [&](const YAML::Node& v, const std::string& key) { return cv.WholeSeconds(v, key, &k.default_walltime); });
  s.On("max_walltime",
       [&](const YAML::Node& v, const std::string& key) { return cv.WholeSeconds(v, key, &k.max_walltime); });
  s.On("max_array_size", [&](const YAML::Node& v, const std::string& key) -> Status {
    uint32_t n = 0;
    if (!cv.U32(v, key, &n, kArraySizeCeiling) || n == 0)
      return cv.Bad(v, key, "a whole number in 1.." + std::to_string(kArraySizeCeiling));
    k.max_array_size = n;
    return {};
  });
  s.On("pass_interval",
       [&](const YAML::Node& v, const std::string& key) { return cv.Seconds(v, key, &c.pass_interval_s); });
  s.On("limits", [&](const YAML::Node& v, const std::string&) -> Status {
    Section l(v, file, "scheduler.limits.");
    Conv lc{l};
    LimitsConfig& lim = k.limits;
    l.On("user_max_running_gpus", [&](const YAML::Node& x, const std::string& key) {
      return lc.U32(x, key, &lim.default_user.max_running_gpus);
    });
    l.On("user_max_pending_jobs", [&](const YAML::Node& x, const std::string& key) {
      return lc.U32(x, key, &lim.default_user.max_pending_jobs);
    });
    l.On("account_max_running_gpus", [&](const YAML::Node& x, const std::string& key) {
      return lc.U32(x, key, &lim.default_account.max_running_gpus);
    });
    l.On("account_max_pending_jobs", [&](const YAML::Node& x, const std::string& key) {
      return lc.U32(x, key, &lim.default_account.max_pending_jobs);
    });
    return l.Run();
  });
  return s.Run();
}

// A walltime limit: seconds, a Slurm time (D-HH:MM:SS, ...) or UNLIMITED (max_walltime only).
Status Walltime(const Conv& cv, const YAML::Node& v, const std::string& key, bool unlimited, Duration* out) {
  if (v.IsScalar()) {
    const std::string x = v.Scalar();
    if (unlimited && (x == "UNLIMITED" || x == "unlimited" || x == "INFINITE" || x == "infinite")) {
      *out = kUnlimitedWalltime;
      return {};
    }
    int64_t n = 0;
    if (YAML::convert<int64_t>::decode(v, n) && n > 0 && n <= kMaxJobSeconds) {
      *out = n;
      return {};
    }
    if (auto d = ParseSlurmDuration(x); d && *d > 0 && *d <= kMaxJobSeconds) {
      *out = *d;
      return {};
    }
  }
  return cv.Bad(
      v, key,
      std::string("seconds or a Slurm time (D-HH:MM:SS) in 1 s..365 days") + (unlimited ? " or UNLIMITED" : ""));
}

// partitions: a list of {name, nodes, state, default, default_walltime, max_walltime,
// max_gpus_per_job, default_qos, allow_users, allow_groups, allow_accounts}.
Status ParsePartitions(const YAML::Node& node, const std::string& file, DaemonConfig& c) {
  if (!node.IsSequence())
    return Fail(file + ":" + std::to_string(node.Mark().line + 1), "partitions: expected a list of partitions");
  c.scheduler.partitions.clear();
  c.partitions.clear();
  for (size_t i = 0; i < node.size(); ++i) {
    const YAML::Node item = node[i];
    PartitionConfig core;
    PartitionOptions opt;
    const std::string prefix = "partitions[" + std::to_string(i) + "].";
    Section s(item, file, prefix);
    Conv cv{s};
    s.On("name", [&](const YAML::Node& v, const std::string& key) { return cv.Str(v, key, &core.name); });
    s.On("nodes", [&](const YAML::Node& v, const std::string& key) -> Status {
      if (!v.IsScalar()) return cv.Bad(v, key, "a hostlist (node[01-04],gpu7)");
      auto names = ExpandHostlist(v.Scalar(), s.Where(v) + ": " + key);
      if (!names) return std::unexpected(names.error());
      core.nodes = std::move(*names);
      opt.nodes_text = v.Scalar();
      return {};
    });
    s.On("state", [&](const YAML::Node& v, const std::string& key) -> Status {
      auto st = ParsePartitionState(Scalar(v));
      if (!st) return cv.Bad(v, key, "UP, DOWN, DRAIN or INACTIVE");
      core.state = *st;
      return {};
    });
    s.On("default", [&](const YAML::Node& v, const std::string& key) { return cv.Bool(v, key, &core.is_default); });
    s.On("default_walltime", [&](const YAML::Node& v, const std::string& key) {
      return Walltime(cv, v, key, false, &core.default_walltime);
    });
    s.On("max_walltime",
         [&](const YAML::Node& v, const std::string& key) { return Walltime(cv, v, key, true, &core.max_walltime); });
    s.On("max_gpus_per_job",
         [&](const YAML::Node& v, const std::string& key) { return cv.U32(v, key, &core.max_gpus_per_job); });
    s.On("max_gpus_per_user",
         [&](const YAML::Node& v, const std::string& key) { return cv.U32(v, key, &core.max_gpus_per_user); });
    s.On("default_qos",
         [&](const YAML::Node& v, const std::string& key) { return cv.Str(v, key, &opt.default_class); });
    s.On("allow_users", [&](const YAML::Node& v, const std::string& key) {
      opt.restricted = true;
      return NameList(cv, v, key, &opt.allow.users);
    });
    s.On("allow_groups", [&](const YAML::Node& v, const std::string& key) {
      opt.restricted = true;
      return NameList(cv, v, key, &opt.allow.groups);
    });
    s.On("allow_accounts", [&](const YAML::Node& v, const std::string& key) {
      opt.restricted = true;
      return NameList(cv, v, key, &opt.allow.accounts);
    });
    PHX_RETURN_IF_ERROR(s.Run());
    if (core.name.empty()) return Fail(s.Where(item), prefix + "name: every partition needs a name");
    opt.name = core.name;
    c.scheduler.partitions.push_back(std::move(core));
    c.partitions.push_back(std::move(opt));
  }
  return {};
}

Status ParseRoot(const YAML::Node& root, const std::string& file, DaemonConfig& c) {
  Section s(root, file, "");
  Conv cv{s};
  s.On("socket", [&](const YAML::Node& v, const std::string& key) { return cv.Str(v, key, &c.socket_path); });
  s.On("admins", [&](const YAML::Node& v, const std::string& key) -> Status {
    if (v.IsNull()) return {};
    if (!v.IsSequence()) return cv.Bad(v, key, "a list of user names");
    c.admins.clear();
    for (const YAML::Node& a : v) {
      if (!a.IsScalar() || a.Scalar().empty()) return cv.Bad(a, key, "a user name");
      c.admins.push_back(a.Scalar());
    }
    return {};
  });
  s.On("user_limits", [&](const YAML::Node& v, const std::string&) -> Status {
    Section t(v, file, "user_limits.");
    Conv tc{t};
    UserLimits& u = c.user_limits;
    t.On("max_connections",
         [&](const YAML::Node& x, const std::string& key) { return tc.U32(x, key, &u.max_connections); });
    t.On("max_connections_per_uid",
         [&](const YAML::Node& x, const std::string& key) { return tc.U32(x, key, &u.max_connections_per_uid); });
    t.On("requests_per_second",
         [&](const YAML::Node& x, const std::string& key) { return tc.NonNegative(x, key, &u.requests_per_second); });
    t.On("request_burst",
         [&](const YAML::Node& x, const std::string& key) { return tc.U32(x, key, &u.request_burst); });
    t.On("idle_timeout",
         [&](const YAML::Node& x, const std::string& key) { return tc.Seconds(x, key, &u.idle_timeout_s); });
    t.On("exempt_uids", [&](const YAML::Node& x, const std::string& key) -> Status {
      if (x.IsNull()) {
        u.exempt_uids.clear();
        return {};
      }
      if (!x.IsSequence()) return tc.Bad(x, key, "a list of uids");
      u.exempt_uids.clear();
      for (const YAML::Node& n : x) {
        uint32_t uid = 0;
        if (auto st = tc.U32(n, key, &uid); !st) return st;
        u.exempt_uids.insert(uid);
      }
      return {};
    });
    return t.Run();
  });
  s.On("admin_groups",
       [&](const YAML::Node& v, const std::string& key) { return NameList(cv, v, key, &c.admin_groups); });
  // private_data: [jobs, names, users] (Slurm's PrivateData); the sensitive fields are always private.
  s.On("private_data", [&](const YAML::Node& v, const std::string& key) -> Status {
    c.private_data = PrivateData{};
    if (v.IsNull()) return {};
    if (!v.IsSequence()) return cv.Bad(v, key, "a list of jobs, names, users");
    for (const YAML::Node& x : v) {
      const std::string what = Scalar(x);
      if (what == "jobs") c.private_data.jobs = true;
      else if (what == "names") c.private_data.names = true;
      else if (what == "users") c.private_data.users = true;
      else return cv.Bad(x, key, "jobs, names or users");
    }
    return {};
  });
  s.On("access", [&](const YAML::Node& v, const std::string&) { return ParseAccess(v, file, c.access); });
  s.On("log_level", [&](const YAML::Node& v, const std::string& key) -> Status {
    const auto level = ParseLogLevel(Scalar(v));
    if (!level) return cv.Bad(v, key, "debug, info, warn or error");
    c.log_level = *level;
    return {};
  });
  s.On("store", [&](const YAML::Node& v, const std::string&) -> Status {
    Section t(v, file, "store.");
    Conv tc{t};
    t.On("path", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &c.db_path); });
    t.On("backend", [&](const YAML::Node& x, const std::string& key) -> Status {
      const auto backend = store::ParseBackend(Scalar(x));
      if (!backend) return tc.Bad(x, key, "sqlite or postgresql");
      if (*backend == store::Backend::kPostgres && !store::PostgresBuilt())
        return Fail(t.Where(x), key +
                                    ": postgresql: this phalanxd was built without the PostgreSQL backend "
                                    "(libpq-dev was not found when it was configured); use sqlite, or rebuild");
      c.store_backend = *backend;
      return {};
    });
    t.On("dsn", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &c.store_dsn); });
    t.On("lease", [&](const YAML::Node& x, const std::string& key) -> Status {
      double d = 0;
      if (auto st = tc.Seconds(x, key, &d); !st) return st;
      if (d < 1) return tc.Bad(x, key, "a number of seconds >= 1");
      c.store_lease_s = d;
      return {};
    });
    t.On("lease_renew", [&](const YAML::Node& x, const std::string& key) -> Status {
      double d = 0;
      if (auto st = tc.Seconds(x, key, &d); !st) return st;
      if (d < 0.1) return tc.Bad(x, key, "a number of seconds >= 0.1");
      c.store_lease_renew_s = d;
      return {};
    });
    t.On("standby", [&](const YAML::Node& x, const std::string& key) { return tc.Bool(x, key, &c.store_standby); });
    t.On("sync", [&](const YAML::Node& x, const std::string& key) -> Status {
      const std::string m = Scalar(x);
      if (m == "normal") c.sync = store::SyncMode::kNormal;
      else if (m == "full") c.sync = store::SyncMode::kFull;
      else return tc.Bad(x, key, "normal or full");
      return {};
    });
    t.On("min_free", [&](const YAML::Node& x, const std::string& key) -> Status {
      auto b = x.IsScalar() ? ParseByteSize(x.Scalar()) : std::unexpected(Error{"", ""});
      if (!b) return tc.Bad(x, key, "a size in bytes (a number, or with a unit: 64MiB, 512KiB, 2GiB; 0: off)");
      c.store_min_free = *b;
      return {};
    });
    return t.Run();
  });
  s.On("topology", [&](const YAML::Node& v, const std::string&) -> Status {
    Section t(v, file, "topology.");
    Conv tc{t};
    t.On("source", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &c.topology); });
    t.On("format", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &c.topology_format); });
    return t.Run();
  });
  s.On("users_tcp", [&](const YAML::Node& v, const std::string&) -> Status {
    Section t(v, file, "users_tcp.");
    Conv tc{t};
    UserTcpConfig& u = c.users_tcp;
    t.On("listen", [&](const YAML::Node& x, const std::string& key) -> Status {
      PHX_RETURN_IF_ERROR(tc.Str(x, key, &u.listen));
      if (!u.listen.empty() && !auth::HaveMunge())
        return Fail(t.Where(x), key +
                                    ": this phalanxd was built without libmunge (libmunge-dev was not installed "
                                    "when it was configured): install it and rebuild to serve users over TCP");
      return {};
    });
    t.On("tls_cert", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &u.tls_cert); });
    t.On("tls_key", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &u.tls_key); });
    t.On("munge_socket", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &u.munge_socket); });
    return t.Run();
  });
  s.On("agents", [&](const YAML::Node& v, const std::string&) -> Status {
    Section t(v, file, "agents.");
    Conv tc{t};
    AgentListenerConfig& a = c.agents;
    t.On("listen", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &a.listen); });
    t.On("token_file", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &a.token_file); });
    t.On("tls_cert", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &a.tls_cert); });
    t.On("tls_key", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &a.tls_key); });
    t.On("tls_client_ca",
         [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &a.tls_client_ca); });
    t.On("heartbeat_interval",
         [&](const YAML::Node& x, const std::string& key) { return tc.Seconds(x, key, &c.heartbeat_interval_s); });
    t.On("heartbeat_timeout",
         [&](const YAML::Node& x, const std::string& key) { return tc.Seconds(x, key, &c.heartbeat_timeout_s); });
    t.On("grace", [&](const YAML::Node& x, const std::string& key) { return tc.Seconds(x, key, &c.agent_grace_s); });
    t.On("startup_grace",
         [&](const YAML::Node& x, const std::string& key) { return tc.Seconds(x, key, &c.startup_grace_s); });
    t.On("kill_grace",
         [&](const YAML::Node& x, const std::string& key) { return tc.Seconds(x, key, &c.kill_grace_s); });
    t.On("fence", [&](const YAML::Node& x, const std::string& key) -> Status {
      bool on = false;
      PHX_RETURN_IF_ERROR(tc.Bool(x, key, &on));
      c.fence = on;
      return Status{};
    });
    t.On("fence_margin",
         [&](const YAML::Node& x, const std::string& key) { return tc.Seconds(x, key, &c.fence_margin_s); });
    t.On("master_port_min",
         [&](const YAML::Node& x, const std::string& key) { return tc.U32(x, key, &c.master_port_min, 65535); });
    t.On("master_port_max",
         [&](const YAML::Node& x, const std::string& key) { return tc.U32(x, key, &c.master_port_max, 65535); });
    return t.Run();
  });
  s.On("scheduler", [&](const YAML::Node& v, const std::string&) { return ParseScheduler(v, file, c); });
  s.On("partitions", [&](const YAML::Node& v, const std::string&) { return ParsePartitions(v, file, c); });
  s.On("mode", [&](const YAML::Node& v, const std::string& key) -> Status {
    const std::string m = Scalar(v);
    if (m != "standalone" && m != "slurm") return cv.Bad(v, key, "standalone or slurm");
    c.mode = m;
    return {};
  });
  // Slurm mode (docs/slurm.md): where Slurm's files are and what makes a job Phalanx's.
  s.On("slurm", [&](const YAML::Node& v, const std::string&) -> Status {
    Section t(v, file, "slurm.");
    Conv tc{t};
    SlurmSection& sl = c.slurm;
    t.On("conf", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &sl.conf); });
    t.On("topology", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &sl.topology); });
    t.On("gres", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &sl.gres); });
    t.On("poll_interval",
         [&](const YAML::Node& x, const std::string& key) { return tc.Seconds(x, key, &sl.poll_interval_s); });
    t.On("fallback_delay",
         [&](const YAML::Node& x, const std::string& key) { return tc.WholeSeconds(x, key, &sl.fallback_delay_s); });
    t.On("start_timeout",
         [&](const YAML::Node& x, const std::string& key) { return tc.WholeSeconds(x, key, &sl.start_timeout_s); });
    t.On("comments", [&](const YAML::Node& x, const std::string& key) { return tc.Bool(x, key, &sl.comments); });
    t.On("report_socket",
         [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &sl.report_socket); });
    t.On("report_listen",
         [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &sl.report_listen); });
    t.On("report_listen",
         [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &sl.report_listen); });
    t.On("munge_socket", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &sl.munge_socket); });
    for (auto [name, list] : {std::pair{"partitions", &sl.partitions}, std::pair{"qos", &sl.qos},
                              std::pair{"report_users", &sl.report_users}}) {
      t.On(name, [&tc, list](const YAML::Node& x, const std::string& key) -> Status {
        if (x.IsNull()) return {};
        if (!x.IsSequence()) return tc.Bad(x, key, "a list of names");
        list->clear();
        for (const YAML::Node& n : x) {
          if (!n.IsScalar() || n.Scalar().empty()) return tc.Bad(n, key, "a name");
          list->push_back(n.Scalar());
        }
        return {};
      });
    }
    return t.Run();
  });
  s.On("http", [&](const YAML::Node& v, const std::string&) -> Status {
    Section t(v, file, "http.");
    Conv tc{t};
    t.On("listen", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &c.http_listen); });
    t.On("admin_token_file",
         [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &c.http.admin_token_file); });
    t.On("allowed_hosts",
         [&](const YAML::Node& x, const std::string& key) { return NameList(tc, x, key, &c.http.allowed_hosts); });
    t.On("allowed_origins",
         [&](const YAML::Node& x, const std::string& key) { return NameList(tc, x, key, &c.http.allowed_origins); });
    return t.Run();
  });
  s.On("history", [&](const YAML::Node& v, const std::string&) -> Status {
    Section t(v, file, "history.");
    Conv tc{t};
    t.On("interval",
         [&](const YAML::Node& x, const std::string& key) { return tc.Seconds(x, key, &c.history_interval_s); });
    t.On("retention",
         [&](const YAML::Node& x, const std::string& key) { return tc.WholeSeconds(x, key, &c.history_retention_s); });
    return t.Run();
  });
  return s.Run();
}

Status ParseInto(const std::string& text, const std::string& name, DaemonConfig& c) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Fail(name + ":" + std::to_string(e.mark.line + 1), "not valid YAML: " + e.msg);
  }
  if (root.IsNull()) return {};  // an empty file: every default
  try {
    return ParseRoot(root, name, c);
  } catch (const YAML::Exception& e) {
    return Fail(name + ":" + std::to_string(e.mark.line + 1), e.msg);
  }
}

// A configuration file is a few KiB; the bound keeps `--config /dev/zero` from growing without limit.
constexpr size_t kMaxConfigBytes = size_t{4} << 20;

Status ReadFileInto(const std::string& path, DaemonConfig& c) {
  auto text = ReadFileBounded(path, kMaxConfigBytes);
  if (!text) return Fail(path, "cannot read the configuration file: " + text.error().message);
  c.config_path = path;
  return ParseInto(*text, path, c);
}

}  // namespace

Result<DaemonConfig> ParseDaemonConfig(const std::string& text, const std::string& name) {
  DaemonConfig c;
  PHX_RETURN_IF_ERROR(ParseInto(text, name, c));
  PHX_RETURN_IF_ERROR(ValidateDaemonConfig(c));
  return c;
}

Result<DaemonConfig> LoadDaemonConfig(const std::string& path) {
  DaemonConfig c;
  PHX_RETURN_IF_ERROR(ReadFileInto(path, c));
  PHX_RETURN_IF_ERROR(ValidateDaemonConfig(c));
  return c;
}

std::string DaemonUsage() {
  return "usage: phalanxd [--config FILE] [options]\n"
         "  --config FILE          YAML configuration (see config/phalanxd.example.yaml)\n"
         "  --socket PATH          users' Unix socket\n"
         "  --db PATH              the SQLite store\n"
         "  --topology SRC         topology file or gen:NAME (default gen:demo)\n"
         "  --topology-format F    auto, yaml, slurm, nvsmi, hwloc\n"
         "  --policy NAME          phalanx, slurm-like, fifo-firstfit\n"
         "  --admin USER           an admin user (repeatable; adds to the file's list)\n"
         "  --agent-listen H:P     TCP listener for agents (off by default)\n"
         "  --token-file PATH      agents' shared token\n"
         "  --tls-cert PATH --tls-key PATH [--tls-client-ca PATH]   TLS for the agent listener\n"
         "  --http-listen H:P      /metrics, /healthz, /api/v1 (off by default)\n"
         "  --log-level L          debug, info, warn, error\n"
         "  --force-topology       start although the topology changed under running jobs\n"
         "  --help\n"
         "A flag takes its value as --flag VALUE or --flag=VALUE, and may be given once (--admin: any\n"
         "number of times).\n";
}

Result<DaemonConfig> ConfigFromArgs(int argc, const char* const* argv, bool* help) {
  static constexpr FlagSpec kFlags[] = {
      {"config", "FILE", ""},       {"socket", "PATH", ""},
      {"db", "PATH", ""},           {"topology", "SRC", ""},
      {"topology-format", "F", ""}, {"policy", "NAME", ""},
      {"admin", "USER", "", true},  {"agent-listen", "H:P", ""},
      {"token-file", "PATH", ""},   {"tls-cert", "PATH", ""},
      {"tls-key", "PATH", ""},      {"tls-client-ca", "PATH", ""},
      {"http-listen", "H:P", ""},   {"log-level", "L", ""},
      {"force-topology", "", ""},   {"help", "", ""},
  };
  *help = false;
  const std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  auto flags = ParseFlags(args, kFlags, /*allow_positional=*/false);
  if (!flags) {
    Error e = std::move(flags).error();
    if (e.code == ErrorCode::kNotFound) e.message += " (see --help)";
    return std::unexpected(std::move(e));
  }
  DaemonConfig c;
  if (flags->Has("help")) {
    *help = true;
    return c;
  }
  // --config first, so that the other flags override the file whatever their order.
  if (flags->Has("config")) PHX_RETURN_IF_ERROR(ReadFileInto(flags->Get("config"), c));
  for (auto [flag, target] : {std::pair{"socket", &c.socket_path},
                              {"db", &c.db_path},
                              {"topology", &c.topology},
                              {"topology-format", &c.topology_format},
                              {"agent-listen", &c.agents.listen},
                              {"token-file", &c.agents.token_file},
                              {"tls-cert", &c.agents.tls_cert},
                              {"tls-key", &c.agents.tls_key},
                              {"tls-client-ca", &c.agents.tls_client_ca},
                              {"http-listen", &c.http_listen}}) {
    if (flags->Has(flag)) *target = flags->Get(flag);
  }
  if (flags->Has("log-level")) {
    const std::string value = flags->Get("log-level");
    const auto level = ParseLogLevel(value);
    if (!level) return Fail("--log-level", "expected debug, info, warn or error, got '" + value + "'");
    c.log_level = *level;
  }
  if (flags->Has("policy")) {
    const std::string value = flags->Get("policy");
    auto preset = PolicyPreset(value);
    if (!preset) return Fail("--policy", preset.error().message);
    c.policy = value;
    c.scheduler = WithPartitions(*preset, c.scheduler.partitions);
  }
  for (std::string& admin : flags->GetAll("admin")) c.admins.push_back(std::move(admin));
  if (flags->Has("force-topology")) c.force_topology = true;
  PHX_RETURN_IF_ERROR(ValidateDaemonConfig(c));
  return c;
}

}  // namespace phalanx::service
