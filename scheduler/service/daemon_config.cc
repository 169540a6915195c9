#include "service/daemon_config.h"

#include <yaml-cpp/yaml.h>

#include <map>
#include <utility>

#include "service/daemon_config_yaml.h"
#include "util/duration.h"
#include "util/file_read.h"
#include "util/flags.h"
#include "util/hostlist.h"
#include "util/job_array.h"
#include "util/job_fields.h"

namespace phalanx::service {
namespace {

using detail::Conv;
using detail::NameList;
using detail::Scalar;
using detail::Section;

// A policy preset keeps the partitions already read (the YAML keys come in any order).
SchedulerConfig WithPartitions(SchedulerConfig preset, const std::vector<PartitionConfig>& partitions) {
  preset.partitions = partitions;
  return preset;
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
  for (const char* name :
       {"order", "backfill", "reserve_depth", "reserve_large_gpus", "placement", "preemption", "elastic", "best_fit",
        "whole_node_reservations", "reserve_larger", "node_fit_tolerance", "runtime", "placement_comm_share",
        "patience_depth", "patience_replan", "patience_far_keep", "reserve_replan", "reserve_horizon"}) {
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
  s.On("user_limits", [&](const YAML::Node& v, const std::string&) { return detail::ParseUserLimits(v, file, c); });
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
  s.On("store", [&](const YAML::Node& v, const std::string&) { return detail::ParseStore(v, file, c); });
  s.On("topology", [&](const YAML::Node& v, const std::string&) { return detail::ParseTopologySection(v, file, c); });
  s.On("users_tcp", [&](const YAML::Node& v, const std::string&) { return detail::ParseUsersTcp(v, file, c); });
  s.On("agents", [&](const YAML::Node& v, const std::string&) { return detail::ParseAgents(v, file, c); });
  s.On("scheduler", [&](const YAML::Node& v, const std::string&) { return ParseScheduler(v, file, c); });
  s.On("partitions", [&](const YAML::Node& v, const std::string&) { return ParsePartitions(v, file, c); });
  s.On("mode", [&](const YAML::Node& v, const std::string& key) -> Status {
    const std::string m = Scalar(v);
    if (m != "standalone" && m != "slurm") return cv.Bad(v, key, "standalone or slurm");
    c.mode = m;
    return {};
  });
  // Slurm mode (docs/slurm.md): where Slurm's files are and what makes a job Phalanx's.
  s.On("slurm", [&](const YAML::Node& v, const std::string&) { return detail::ParseSlurm(v, file, c); });
  s.On("http", [&](const YAML::Node& v, const std::string&) { return detail::ParseHttp(v, file, c); });
  s.On("history", [&](const YAML::Node& v, const std::string&) { return detail::ParseHistory(v, file, c); });
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
