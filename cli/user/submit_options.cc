#include "submit_options.h"

#include <algorithm>

#include "duration.h"
#include "job_spec_check.h"
#include "sbatch_compat.h"
#include "signal_names.h"
#include "util/constraint.h"
#include "util/dependency.h"
#include "util/hostlist.h"
#include "util/job_array.h"
#include "util/job_fields.h"
#include "util/strings.h"

namespace phalanx::cli {
namespace {

constexpr uint64_t kMaxGpus = kMaxJobGpus;  // util/job_fields.h: the daemon's bounds too
constexpr uint64_t kMaxNodes = kMaxJobGpus;

constexpr OptionSpec kSpecs[] = {
    {"gpus", 'G', "N|MIN:MAX", "total GPUs (default 1); MIN:MAX makes the job elastic"},
    {"elastic-step", 0, "N|pow2", "elastic sizes: multiples of N, or powers of two"},
    {"nodes", 'N', "N", "exactly N nodes (with --gpus-per-node, or a -G that N divides)"},
    {"gpus-per-node", 0, "N", "GPUs on each node"},
    {"time", 't', "DUR",
     "walltime: MM, MM:SS, HH:MM:SS, D-HH[:MM[:SS]], 90s, 30m, 2h, 1d; UNLIMITED or 0: the partition's maximum "
     "(default: the partition's default)"},
    {"partition", 'p', "NAME[,NAME...]",
     "partition(s); the job runs in the first where it can start (default: the "
     "site's default partition; ginfo lists them)"},
    {"qos", 'q', "CLASS",
     "QOS: the priority class (low, normal, high, urgent; default: the partition's or the site's)"},
    {"priority", 0, "CLASS", "the same as --qos (its name before partitions)", "qos"},
    {"topology", 0, "LEVEL[:prefer]", "node, nvlink, leaf, spine or any; :prefer prefers, not requires"},
    {"exclusive", 0, "", "whole nodes only"},
    {"preemptible", 0, "", "the job may be preempted (default: its class decides)"},
    {"no-preemptible", 0, "", "the job may not be preempted", "preemptible", "false"},
    {"checkpoint-signal", 0, "SIG[@SECS]", "signal SECS before preemption or the walltime (default USR1)"},
    {"checkpoint-interval", 0, "DUR", "ask the job for a checkpoint this often"},
    {"job-name", 'J', "NAME", "default: the script's or the command's name"},
    {"output", 'o', "PATTERN", "stdout file: %j id, %x name, %u user, %N node (default phalanx-%j.out)"},
    {"error", 'e', "PATTERN", "stderr file (default: the stdout file)"},
    {"dependency", 'd', "TYPE:ID[:ID...][,...]",
     "after, afterany, afterok, afternotok (ID, ARRAY or ARRAY_TASK), singleton; ',' all, '?' any"},
    {"array", 'a', "INDEXES[%N]", "job array: 0-99, 1,3,5-7 or 0-15:4; %N: at most N tasks running at once"},
    {"account", 'A', "NAME", "account to charge"},
    {"hold", 'H', "", "submit the job held"},
    {"chdir", 'D', "DIR", "working directory (default: the current one)"},
    {"export", 0, "ALL|NONE|VAR[=val],...", "environment for the job (default ALL: yours)"},
    {"wrap", 0, "CMD", "run CMD with /bin/sh instead of a script"},
    {"parsable", 0, "", "print only the job id"},
    {"json", 0, "", "print the SubmitResponse as JSON"},
    {"socket", 0, "PATH", "phalanxd's socket (default $PHALANX_SOCKET, /run/phalanx/phalanxd.sock)"},
    {"server", 0, "HOST:PORT[,...]",
     "phalanxd over TCP, addresses tried in order (default $PHALANX_SERVER, /etc/phalanx/phalanx.conf)"},
    // sbatch's options (docs/user-guide.md, "Coming from Slurm").
    {"gres", 0, "gpu[:TYPE]:N", "N GPUs per node (as --gpus-per-node); TYPE adds a constraint (-C TYPE)"},
    {"cpus-per-task", 'c', "N", "CPUs per task: recorded, exported as SLURM_CPUS_PER_TASK (not enforced)"},
    {"mem", 0, "SIZE", "memory per node, N[K|M|G|T] (MB): recorded, exported (not enforced)"},
    {"mem-per-gpu", 0, "SIZE", "memory per GPU, N[K|M|G|T] (MB): recorded, exported (not enforced)"},
    {"ntasks", 'n', "N", "tasks: exported as SLURM_NTASKS (Phalanx starts one process per node)"},
    {"ntasks-per-node", 0, "N", "tasks per node: exported as SLURM_NTASKS_PER_NODE"},
    {"begin", 0, "TIME", "start no earlier: now+1hour, HH:MM[:SS], YYYY-MM-DD[THH:MM[:SS]], tomorrow, ..."},
    {"nodelist", 'w', "HOSTLIST", "run only on these nodes (node[01-04],gpu7)"},
    {"exclude", 'x', "HOSTLIST", "never run on these nodes"},
    {"constraint", 'C', "FEATURES", "node features: the model's name or its words (h100, dgx-h100); A&B, A|B"},
    {"signal", 0, "[B:]SIG[@SECS]", "as --checkpoint-signal (sbatch's name)", "checkpoint-signal"},
    {"requeue", 0, "", "requeue the job after a node failure (the default)"},
    {"no-requeue", 0, "", "fail the job on a node failure instead of requeueing it", "requeue", "false"},
    {"wait", 'W', "", "wait for the job to end; exit with its exit code"},
    {"test-only", 0, "", "submit nothing: print when and where the job would start if submitted now"},
    {"comment", 0, "TEXT", "a comment, recorded with the job"},
    {"open-mode", 0, "append|truncate", "output files: appended to (default) or emptied at the start"},
    {"mail-type", 0, "TYPE[,TYPE]", "recorded (phalanxd sends no mail): NONE, BEGIN, END, FAIL, ALL, ..."},
    {"mail-user", 0, "ADDRESS", "recorded (phalanxd sends no mail)"},
    {"help", 'h', "", "this help"},
};

// A shared rule (util/job_fields.h) applied to an option's value, the error naming the flag.
Status Rule(const OptionValue& v, const Status& checked) {
  if (!checked) return std::unexpected(v.Bad(checked.error().message));
  return {};
}

// Where CheckJobSpec's fields come from, for its errors on what no single flag set.
std::string FieldOrigin(std::string_view field) {
  static constexpr std::pair<std::string_view, std::string_view> kOrigins[] = {
      {"spec.name", "the job name (-J/--job-name, or the script's or command's name)"},
      {"spec.command", "the command"},
      {"spec.script", "the script"},
      {"spec.env", "the environment (--export)"},
      {"spec.working_dir", "the working directory (-D/--chdir, or the current one)"},
      {"spec.submit_info.mail_type", "--mail-type"},
      {"spec.constraint", "the constraint (-C, and a GPU type from -G TYPE:N or --gres)"},
  };
  for (const auto& [prefix, origin] : kOrigins) {
    if (field.starts_with(prefix)) return std::string(origin);
  }
  return std::string(field);
}

Result<uint32_t> Count(const OptionValue& v, uint64_t lo, uint64_t hi, std::string_view what) {
  auto n = ParseCount(v.value, lo, hi);
  if (!n) return std::unexpected(v.Bad(n.error().message + " (" + std::string(what) + ")"));
  return static_cast<uint32_t>(*n);
}

Result<int64_t> Duration(const OptionValue& v) {
  auto d = ParseDuration(v.value);
  if (!d) return std::unexpected(v.Bad(d.error().message));
  return *d;
}

std::string BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

bool IsVarName(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool IsClassName(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

bool HasPowerOfTwoIn(uint32_t lo, uint32_t hi) {
  for (uint64_t p = 1; p <= hi; p *= 2) {
    if (p >= lo) return true;
  }
  return false;
}

// -G / -N / --gpus-per-node / --elastic-step -> the size fields.
Status ApplyShape(const ParsedOptions& o, v1::JobSpec& spec) {
  GpuCount gpus{0, 1};
  const OptionValue* g = o.Find("gpus");
  if (g != nullptr) {
    PHX_ASSIGN_OR_RETURN(auto parsed, ParseGpus(*g));
    gpus = parsed;
  }
  const OptionValue* gpn = o.Find("gpus-per-node");
  // --gres=gpu[:TYPE]:N is per node, as in Slurm: --gpus-per-node N.
  OptionValue gres_per_node;
  if (const OptionValue* gres = o.Find("gres")) {
    auto parsed = ParseGresGpus(gres->value);
    if (!parsed) return std::unexpected(gres->Bad(parsed.error().message));
    if (gpn != nullptr && gpn->value != std::to_string(parsed->count)) {
      return std::unexpected(
          gres->Bad(Quote(gres->value) + " asks for other GPUs per node than " + gpn->flag + " " + gpn->value));
    }
    gres_per_node = OptionValue{std::to_string(parsed->count), gres->flag, gres->where};
    gpn = &gres_per_node;
    if (!parsed->type.empty()) gpus.type = parsed->type;
  }
  if (!gpus.type.empty()) spec.set_constraint(AddFeature(spec.constraint(), gpus.type));
  const bool elastic = gpus.min > 0 && gpus.min < gpus.max;
  const OptionValue* n = o.Find("nodes");
  uint32_t nodes = 0, per_node = 0;
  if (n != nullptr) {
    PHX_ASSIGN_OR_RETURN(auto v, Count(*n, 1, kMaxNodes, "nodes"));
    nodes = v;
  }
  if (gpn != nullptr) {
    PHX_ASSIGN_OR_RETURN(auto v, Count(*gpn, 1, kMaxGpus, "GPUs per node"));
    per_node = v;
  }
  if (elastic && (n != nullptr || gpn != nullptr)) {
    const OptionValue* which = n != nullptr ? n : gpn;
    return std::unexpected(
        which->Bad("an elastic job (" + g->flag + " " + g->value + ") cannot also ask for a node shape"));
  }
  if (n != nullptr && gpn != nullptr) {
    if (g != nullptr && static_cast<uint64_t>(nodes) * per_node != gpus.max) {
      return std::unexpected(g->Bad(Quote(g->value) + " is not " + n->flag + " " + n->value + " x " + gpn->flag + " " +
                                    gpn->value + " = " + std::to_string(uint64_t{nodes} * per_node)));
    }
    if (uint64_t{nodes} * per_node > kMaxGpus) return std::unexpected(n->Bad("too many GPUs in all"));
    gpus.max = nodes * per_node;
  } else if (n != nullptr) {
    if (g == nullptr) return std::unexpected(n->Bad("needs -G/--gpus or --gpus-per-node"));
    if (gpus.max % nodes != 0) {
      return std::unexpected(n->Bad(std::to_string(gpus.max) + " GPUs (" + g->flag + " " + g->value +
                                    ") do not divide over " + n->value + " nodes; give --gpus-per-node"));
    }
    per_node = gpus.max / nodes;
  } else if (gpn != nullptr) {
    if (g == nullptr) {
      nodes = 1;
      gpus.max = per_node;
    } else if (gpus.max % per_node != 0) {
      return std::unexpected(gpn->Bad(std::to_string(gpus.max) + " GPUs (" + g->flag + " " + g->value +
                                      ") are not a multiple of " + gpn->value));
    } else {
      nodes = gpus.max / per_node;
    }
  }
  spec.set_gpus(gpus.max);
  if (elastic) spec.set_min_gpus(gpus.min);
  spec.set_nodes(nodes);
  spec.set_gpus_per_node(per_node);

  if (const OptionValue* step = o.Find("elastic-step"); step != nullptr) {
    if (!elastic) return std::unexpected(step->Bad("needs an elastic job (-G MIN:MAX)"));
    if (step->value == "pow2") {
      if (!HasPowerOfTwoIn(gpus.min, gpus.max)) {
        return std::unexpected(step->Bad("no power of two between " + std::to_string(gpus.min) + " and " +
                                         std::to_string(gpus.max) + " GPUs"));
      }
      spec.set_elastic_step_kind(v1::ELASTIC_STEP_POWER_OF_TWO);
    } else {
      auto s = ParseCount(step->value, 1, kMaxGpus);
      if (!s) return std::unexpected(step->Bad(s.error().message + " (a step N, or pow2)"));
      const uint64_t first = (gpus.min + *s - 1) / *s * *s;
      if (first > gpus.max) {
        return std::unexpected(step->Bad("no multiple of " + step->value + " between " + std::to_string(gpus.min) +
                                         " and " + std::to_string(gpus.max) + " GPUs"));
      }
      spec.set_elastic_step_kind(v1::ELASTIC_STEP_MULTIPLE);
      spec.set_elastic_step(static_cast<uint32_t>(*s));
    }
  }
  return {};
}

// sbatch's options beyond the shape: -c, --mem, -n, --begin, -w, -x, -C, --requeue, --comment,
// --open-mode, --mail-*, and where the submission came from.
Status ApplySlurmOptions(const ParsedOptions& o, const SubmitContext& ctx, v1::JobSpec& spec) {
  if (const OptionValue* v = o.Find("cpus-per-task")) {
    PHX_ASSIGN_OR_RETURN(auto n, Count(*v, 1, 1u << 16, "CPUs per task"));
    spec.set_cpus_per_task(n);
  }
  for (const auto& [key, setter] : {std::pair{"mem", &v1::JobSpec::set_mem_per_node_mb},
                                    std::pair{"mem-per-gpu", &v1::JobSpec::set_mem_per_gpu_mb}}) {
    if (const OptionValue* v = o.Find(key)) {
      auto mb = ParseMemoryMb(v->value);
      if (!mb) return std::unexpected(v->Bad(mb.error().message));
      (spec.*setter)(*mb);
    }
  }
  if (o.Has("mem") && o.Has("mem-per-gpu")) {
    return std::unexpected(o.Find("mem-per-gpu")->Bad("give --mem or --mem-per-gpu, not both (as sbatch)"));
  }
  if (const OptionValue* v = o.Find("ntasks")) {
    PHX_ASSIGN_OR_RETURN(auto n, Count(*v, 1, kMaxGpus, "tasks"));
    spec.set_ntasks(n);
  }
  if (const OptionValue* v = o.Find("ntasks-per-node")) {
    PHX_ASSIGN_OR_RETURN(auto n, Count(*v, 1, kMaxGpus, "tasks per node"));
    spec.set_ntasks_per_node(n);
  }
  if (const OptionValue* v = o.Find("begin")) {
    if (!ctx.clock.to_local || !ctx.clock.from_local) return std::unexpected(v->Bad("no clock to read the time with"));
    auto t = ParseBeginTime(v->value, ctx.clock);
    if (!t) return std::unexpected(v->Bad(t.error().message));
    spec.set_begin_time(*t);
  }
  for (const char* key : {"nodelist", "exclude"}) {
    if (const OptionValue* v = o.Find(key)) {
      auto hosts = ExpandHostlist(v->value, "");
      if (!hosts) return std::unexpected(v->Bad(hosts.error().message));
      key == std::string_view("nodelist") ? spec.set_nodelist(v->value) : spec.set_exclude(v->value);
    }
  }

  if (const OptionValue* v = o.Find("constraint")) {
    auto c = ParseConstraint(v->value, "");
    if (!c) return std::unexpected(v->Bad(c.error().message));
    // A GPU type from -G TYPE:N or --gres=gpu:TYPE:N is required on top.
    spec.set_constraint(spec.constraint().empty() ? c->ToString() : AddFeature(c->ToString(), spec.constraint()));
  }
  if (const OptionValue* v = o.Find("requeue")) spec.set_requeue(v->value == "true");
  if (const OptionValue* v = o.Find("comment")) {
    PHX_RETURN_IF_ERROR(Rule(*v, CheckLabel("comment", v->value, kMaxPathBytes)));
    spec.set_comment(v->value);
  }
  v1::JobSubmitInfo& info = *spec.mutable_submit_info();
  if (const OptionValue* v = o.Find("open-mode")) {
    if (v->value != "append" && v->value != "truncate")
      return std::unexpected(v->Bad(Quote(v->value) + " is not append or truncate"));
    info.set_open_truncate(v->value == "truncate");
  }
  if (const OptionValue* v = o.Find("mail-type")) {
    std::string upper = v->value;
    for (char& ch : upper) {
      if (ch >= 'a' && ch <= 'z') ch = static_cast<char>(ch - 'a' + 'A');
    }
    info.set_mail_type(upper);
  }
  if (const OptionValue* v = o.Find("mail-user")) {
    PHX_RETURN_IF_ERROR(Rule(*v, CheckLabel("mail-user", v->value)));
    info.set_mail_user(v->value);
  }
  info.set_submit_dir(ctx.cwd);
  info.set_submit_host(ctx.hostname);
  return {};
}

}  // namespace

std::span<const OptionSpec> SubmitOptionSpecs() { return kSpecs; }

Result<ParsedOptions> ParseSubmitArgs(std::span<const std::string> args) {
  auto parsed = ParseOptions(args, kSpecs, Positionals::kStopAtFirst);
  if (parsed || !parsed.error().message.starts_with("unknown option '")) return parsed;
  // An sbatch option gsub does not have: say so, and why, rather than only "unknown".
  const std::string& m = parsed.error().message;
  const size_t open = m.find('\''), close = m.find('\'', open + 1);
  const std::string flag = m.substr(open + 1, close - open - 1);
  const Unsupported* u = flag.starts_with("--") ? FindUnsupported(flag.substr(2), 0)
                         : flag.size() == 2     ? FindUnsupported({}, flag[1])
                                                : nullptr;
  if (u == nullptr) return parsed;
  return Fail("", flag + ": an sbatch option Phalanx does not support: " + std::string(u->why));
}

Result<GpuCount> ParseGpus(const OptionValue& v) {
  const std::string bad = " (N, or MIN:MAX for an elastic job)";
  const size_t colon = v.value.find(':');
  if (colon == std::string::npos) {
    auto n = ParseCount(v.value, 1, kMaxGpus);
    if (!n) return std::unexpected(v.Bad(n.error().message + bad));
    return GpuCount{0, static_cast<uint32_t>(*n)};
  }
  const std::string_view before = std::string_view(v.value).substr(0, colon);
  if (!before.empty() && !(before[0] >= '0' && before[0] <= '9')) {  // TYPE:N, as sbatch's --gpus=a100:2
    auto g = ParseGresGpus("gpu:" + v.value);
    if (!g) return std::unexpected(v.Bad(Quote(v.value) + " is not a GPU count (N, MIN:MAX or TYPE:N)"));
    return GpuCount{0, g->count, g->type};
  }
  auto lo = ParseCount(before, 1, kMaxGpus);
  auto hi = ParseCount(std::string_view(v.value).substr(colon + 1), 1, kMaxGpus);
  if (!lo || !hi) return std::unexpected(v.Bad(Quote(v.value) + " is not a GPU count" + bad));
  if (*lo > *hi) return std::unexpected(v.Bad(Quote(v.value) + ": the minimum is above the maximum"));
  if (*lo == *hi) return GpuCount{0, static_cast<uint32_t>(*hi)};
  return GpuCount{static_cast<uint32_t>(*lo), static_cast<uint32_t>(*hi)};
}

Result<std::pair<v1::TopologyLevel, bool>> ParseTopology(const OptionValue& v) {
  std::string_view level = v.value;
  bool prefer = false;
  if (const size_t colon = level.find(':'); colon != std::string_view::npos) {
    const std::string_view mode = level.substr(colon + 1);
    if (mode == "prefer") {
      prefer = true;
    } else if (mode != "require") {
      return std::unexpected(v.Bad(Quote(v.value) + ": unknown mode " + Quote(mode) + " (prefer or require)"));
    }
    level = level.substr(0, colon);
  }
  static constexpr std::pair<std::string_view, v1::TopologyLevel> kLevels[] = {
      {"any", v1::TOPOLOGY_LEVEL_ANY},    {"node", v1::TOPOLOGY_LEVEL_NODE}, {"nvlink", v1::TOPOLOGY_LEVEL_NVLINK},
      {"nvl", v1::TOPOLOGY_LEVEL_NVLINK}, {"leaf", v1::TOPOLOGY_LEVEL_LEAF}, {"spine", v1::TOPOLOGY_LEVEL_SPINE},
  };
  for (const auto& [name, value] : kLevels) {
    if (name == level) return std::pair{value, prefer};
  }
  return std::unexpected(v.Bad(Quote(v.value) + " is not a level (node, nvlink, leaf, spine or any, with :prefer)"));
}

Result<std::pair<int, int64_t>> ParseCheckpointSignal(const OptionValue& v) {
  std::string_view sig = v.value;
  // sbatch's --signal=B:SIG: only the batch shell; Phalanx signals the job's process group.
  if (sig.starts_with("B:")) sig.remove_prefix(2);
  int64_t seconds = 0;
  if (const size_t at = sig.find('@'); at != std::string_view::npos) {
    const std::string_view when = sig.substr(at + 1);
    sig = sig.substr(0, at);
    // Bare numbers are seconds here (as in sbatch --signal=SIG@SECS); 90s, 5m, 1h also work.
    const bool has_unit = !when.empty() && (when.back() < '0' || when.back() > '9');
    if (has_unit) {
      auto s = ParseDuration(when);
      if (!s) return std::unexpected(v.Bad(Quote(v.value) + ": " + s.error().message));
      seconds = *s;
    } else {
      auto s = ParseCount(when, 1, 86400);
      if (!s)
        return std::unexpected(v.Bad(Quote(v.value) + ": " + Quote(when) + " is not a number of seconds (1..86400)"));
      seconds = static_cast<int64_t>(*s);
    }
  }
  auto n = ParseSignal(sig);
  if (!n) return std::unexpected(v.Bad(Quote(v.value) + ": " + n.error().message));
  return std::pair{*n, seconds};
}

// Slurm's forms (util/dependency.h), sent in its canonical text.
Result<std::string> ParseDependency(const OptionValue& v) {
  auto d = ParseDependencies(v.value);
  if (!d) return std::unexpected(v.Bad(d.error().message));
  return FormatDependencies(*d);
}

Result<std::map<std::string, std::string>> ParseExport(const OptionValue& v,
                                                       const std::map<std::string, std::string>& environment) {
  std::map<std::string, std::string> out;
  if (v.value.empty()) return std::unexpected(v.Bad("'' names nothing (ALL, NONE or VAR[=value],...)"));
  for (std::string_view item : Split(v.value, ',')) {
    if (item == "ALL" || item == "all") {
      for (const auto& [k, val] : environment) out.emplace(k, val);  // explicit VAR=val wins
      continue;
    }
    if (item == "NONE" || item == "none") continue;
    const size_t eq = item.find('=');
    const std::string_view name = item.substr(0, eq);
    if (!IsVarName(name)) return std::unexpected(v.Bad(Quote(item) + " is not VAR or VAR=value (or ALL, NONE)"));
    if (eq != std::string_view::npos) {
      out[std::string(name)] = std::string(item.substr(eq + 1));
    } else if (auto it = environment.find(std::string(name)); it != environment.end()) {
      out[it->first] = it->second;  // a variable you do not have is not exported (as in Slurm)
    }
  }
  return out;
}

Result<ParsedOptions> ParseDirectives(std::string_view text, std::string_view script_name,
                                      std::vector<std::string>* warnings) {
  ParsedOptions all, sbatch;  // #PHX over #SBATCH, whatever their order
  std::vector<std::string> ignored;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    line = Trim(line);
    if (line.empty()) continue;
    if (line[0] != '#') break;  // the first command ends the directives
    const std::string where = std::string(script_name) + ":" + std::to_string(line_no);
    if (line.starts_with("#SBATCH")) {
      std::string_view rest = line.substr(7);
      if (!rest.empty() && rest[0] != ' ' && rest[0] != '\t') continue;  // "#SBATCHfoo": a comment
      auto words = SplitWords(rest);
      if (!words) return Fail(where, "#SBATCH: " + words.error().message);
      PHX_ASSIGN_OR_RETURN(auto parsed, ParseSbatchWords(*words, where, kSpecs, ignored));
      sbatch.OverrideWith(parsed);
      continue;
    }
    if (!line.starts_with("#PHX")) continue;
    std::string_view rest = line.substr(4);
    if (!rest.empty() && rest[0] != ' ' && rest[0] != '\t') continue;  // "#PHXfoo": a comment
    auto words = SplitWords(rest);
    if (!words) return Fail(where, "#PHX: " + words.error().message);
    PHX_ASSIGN_OR_RETURN(auto parsed, ParseOptions(*words, kSpecs, Positionals::kInterleaved, where));
    if (parsed.dashdash || !parsed.positional.empty()) {
      const std::string what = parsed.dashdash ? "--" : parsed.positional[0];
      return Fail(where, "#PHX takes options only, not " + Quote(what));
    }
    all.OverrideWith(parsed);
  }
  if (warnings != nullptr) warnings->insert(warnings->end(), ignored.begin(), ignored.end());
  sbatch.OverrideWith(all);
  return sbatch;
}

Result<v1::JobSpec> BuildJobSpec(const ParsedOptions& o, const SubmitContext& ctx) {
  v1::JobSpec spec;
  PHX_RETURN_IF_ERROR(ApplyShape(o, spec));
  if (const OptionValue* v = o.Find("time")) {
    // As sbatch: UNLIMITED (INFINITE) and 0 mean the partition's maximum; the daemon knows it.
    if (v->value == "UNLIMITED" || v->value == "unlimited" || v->value == "INFINITE" || v->value == "infinite" ||
        v->value == "0") {
      spec.set_walltime_max(true);
    } else {
      PHX_ASSIGN_OR_RETURN(auto d, Duration(*v));
      spec.set_walltime_s(d);
    }
  }
  if (const OptionValue* v = o.Find("partition")) {
    for (std::string_view name : Split(v->value, ',')) {
      if (!IsClassName(name))
        return std::unexpected(
            v->Bad(Quote(name) + " is not a partition name (letters, digits, _ and -; a,b for several)"));
      spec.add_partitions(std::string(name));
    }
  }
  if (const OptionValue* v = o.Find("qos")) {
    if (!IsClassName(v->value))
      return std::unexpected(v->Bad(Quote(v->value) + " is not a class name (low, normal, high, urgent)"));
    spec.set_priority_class(v->value);
  }
  if (const OptionValue* v = o.Find("topology")) {
    PHX_ASSIGN_OR_RETURN(auto t, ParseTopology(*v));
    spec.set_topology(t.first);
    spec.set_topology_prefer(t.second);
  }
  spec.set_exclusive(o.Has("exclusive"));
  if (const OptionValue* v = o.Find("preemptible")) spec.set_preemptible(v->value == "true");
  if (const OptionValue* v = o.Find("checkpoint-signal")) {
    PHX_ASSIGN_OR_RETURN(auto s, ParseCheckpointSignal(*v));
    spec.set_checkpoint_signal(s.first);
    spec.set_checkpoint_warning_s(s.second);
  }
  if (const OptionValue* v = o.Find("checkpoint-interval")) {
    PHX_ASSIGN_OR_RETURN(auto d, Duration(*v));
    spec.set_checkpoint_interval_s(d);
  }
  if (const OptionValue* v = o.Find("job-name")) {
    if (v->value.empty()) return std::unexpected(v->Bad("the name is empty"));
    PHX_RETURN_IF_ERROR(Rule(*v, CheckLabel("name", v->value)));
    spec.set_name(v->value);
  }
  if (const OptionValue* v = o.Find("output")) {
    PHX_RETURN_IF_ERROR(Rule(*v, CheckPath("output", v->value)));
    spec.set_stdout_pattern(v->value);
  }
  if (const OptionValue* v = o.Find("error")) {
    PHX_RETURN_IF_ERROR(Rule(*v, CheckPath("error", v->value)));
    spec.set_stderr_pattern(v->value);
  }
  if (const OptionValue* v = o.Find("dependency")) {
    PHX_ASSIGN_OR_RETURN(auto text, ParseDependency(*v));
    spec.set_dependency(text);
  }
  if (const OptionValue* v = o.Find("array")) {
    // The daemon's max_array_size applies there; here only Slurm's ceiling.
    if (auto a = ParseArraySpec(v->value, kArraySizeCeiling); !a) return std::unexpected(v->Bad(a.error().message));
    spec.set_array(v->value);
  }
  if (const OptionValue* v = o.Find("account")) {
    PHX_RETURN_IF_ERROR(Rule(*v, CheckLabel("account", v->value)));
    spec.set_account(v->value);
  }
  spec.set_hold(o.Has("hold"));
  std::string dir = ctx.cwd;
  if (const OptionValue* v = o.Find("chdir")) {
    if (v->value.empty()) return std::unexpected(v->Bad("the directory is empty"));
    PHX_RETURN_IF_ERROR(Rule(*v, CheckPath("chdir", v->value)));
    dir = v->value.starts_with('/') ? v->value : ctx.cwd + (ctx.cwd.ends_with('/') ? "" : "/") + v->value;
  }
  spec.set_working_dir(dir);
  if (ctx.umask) spec.set_umask(*ctx.umask & 0777);
  const OptionValue all{"ALL", "--export", ""};
  const OptionValue* e = o.Find("export");
  PHX_ASSIGN_OR_RETURN(auto env, ParseExport(e != nullptr ? *e : all, ctx.environment));
  spec.mutable_env()->insert(env.begin(), env.end());
  PHX_RETURN_IF_ERROR(ApplySlurmOptions(o, ctx, spec));
  return spec;
}

Result<SubmitPlan> PlanSubmit(const ParsedOptions& command_line, const SubmitContext& ctx) {
  ParsedOptions options;
  const OptionValue* wrap = command_line.Find("wrap");
  std::string script, script_name;
  std::vector<std::string> command;
  std::vector<std::string> warnings;
  if (command_line.dashdash) {
    if (command_line.positional.empty()) return Fail("", "nothing to run after '--'");
    if (wrap != nullptr) return Fail("", "give --wrap or a command after '--', not both");
    command = command_line.positional;
  } else if (!command_line.positional.empty()) {
    if (wrap != nullptr) return Fail("", "give --wrap or a script, not both");
    script_name = command_line.positional[0];
    PHX_ASSIGN_OR_RETURN(auto text, ctx.read_file(script_name));
    script = std::move(text);
    if (script.empty()) return Fail(script_name, "the script is empty");
    if (script.find('\0') != std::string::npos) {
      return Fail(script_name,
                  "is a binary file, not a script (to run a program: gsub [options] -- PROGRAM [ARGS...])");
    }
    if (script.size() > kMaxScriptBytes) {
      return Fail(script_name, "the script has " + std::to_string(script.size()) + " bytes; at most " +
                                   std::to_string(kMaxScriptBytes) + " are accepted");
    }
    PHX_ASSIGN_OR_RETURN(auto directives, ParseDirectives(script, script_name, &warnings));
    options = std::move(directives);
    command.assign(command_line.positional.begin() + 1, command_line.positional.end());
  } else if (wrap != nullptr) {
    script = "#!/bin/sh\n" + wrap->value + "\n";
  } else {
    return Fail("", "nothing to run: give a script, --wrap CMD, or -- COMMAND [ARGS...] (see --help)");
  }
  options.OverrideWith(command_line);

  PHX_ASSIGN_OR_RETURN(auto spec, BuildJobSpec(options, ctx));
  SubmitPlan plan;
  plan.spec = std::move(spec);
  if (!script.empty() || wrap != nullptr) plan.spec.set_script(script);
  for (const std::string& arg : command) plan.spec.add_command(arg);
  if (plan.spec.name().empty()) {
    plan.spec.set_name(wrap != nullptr ? "wrap" : !script_name.empty() ? BaseName(script_name) : BaseName(command[0]));
  }
  // The daemon's own check of every field (the same function): what it would refuse, gsub
  // refuses before sending.
  if (auto st = CheckJobSpec(plan.spec); !st) {
    return Fail("", FieldOrigin(st.error().where) + ": " + st.error().message);
  }
  plan.warnings = std::move(warnings);
  plan.wait = options.Has("wait");
  plan.test_only = options.Has("test-only");
  plan.parsable = options.Has("parsable");
  plan.json = options.Has("json");
  plan.socket = options.Get("socket");
  plan.server = options.Get("server");
  return plan;
}

}  // namespace phalanx::cli
