// phalanx sim: replays a job trace through the scheduling core under one or more policies and
// reports them side by side (table on stdout; JSON, CSV time series and an HTML page on request).
// This file does the I/O (files, clock, progress bar); the simulation is scheduler/sim/.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "adapters/topology/topology_loader.h"
#include "args.h"
#include "commands.h"
#include "core/sched/config.h"
#include "sim/report.h"
#include "sim/simulator.h"
#include "sim/trace.h"
#include "util/file_read.h"
#include "util/numbers.h"

namespace phalanx::cli {
namespace {

// The share of multi-GPU trace jobs made elastic unless --elastic-share says otherwise.
constexpr double kDefaultElasticShare = 0;
std::string FormatShare(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// A path as reports show it: never an absolute path of the machine that ran it. Absolute paths
// become relative to the repository the working directory is in (the nearest folder up with a
// .git), e.g. "../shared/traces/x.csv"; outside any repository, the file name alone. Relative
// paths and gen:NAME stay as given.
std::string ReportPath(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty() || path.front() != '/') return path;
  std::error_code ec;
  fs::path dir = fs::current_path(ec);
  for (; !ec && !dir.empty(); dir = dir.parent_path()) {
    if (fs::exists(dir / ".git", ec)) return fs::path(path).lexically_relative(dir).string();
    if (dir == dir.parent_path()) break;
  }
  return fs::path(path).filename().string();
}

constexpr FlagSpec kSimFlags[] = {
    {"topology", "FILE", "cluster: topology file or gen:NAME (required)"},
    {"trace", "FILE", "job trace: CSV (job_id,submit_s,gpus,duration_s,...) or sacct --parsable2 (required)"},
    {"policy", "P",
     "phalanx, slurm-like, ideal-backfill or fifo-firstfit, or PRESET:KEY=V,... (e.g. phalanx:backfill=conservative); "
     "repeat for side "
     "by side (default: all four)",
     true},
    {"walltime", "MODE",
     "model (default: users' estimates, overestimated and rounded up to round values; docs/simulator.md), exact, "
     "factor:F, random:F (uniform in [1,F]) or trace (sacct Timelimit)"},
    {"class-rule", "RULE", "map jobs to classes, e.g. gpus>=64:class=high (repeatable; see docs/simulator.md)", true},
    {"seed", "S", "seed of every random choice (default 1)"},
    {"window", "A:B", "replay only jobs submitted in [A, B) seconds (e.g. 1209600:8467200)"},
    {"load-scale", "F", "divide submit times by F (F x the offered load; applied after --window)"},
    {"checkpoint-delay", "S", "seconds a job takes to write the checkpoint it was asked for (default 30)"},
    {"checkpoint-answer", "F",
     "share of jobs that answer a checkpoint request (default 0.8; the others lose the work since their last own "
     "save)"},
    {"checkpoint-interval", "S", "jobs save on their own every S seconds of a run (default 3600; 0: never)"},
    {"requeue-delay", "S", "seconds a requeued job is held before it may start again (default 121, Slurm's)"},
    {"restart-overhead", "S", "seconds of no progress at every resume or resize (default 120)"},
    {"comm-share", "C",
     "runtime model: share of a multi-GPU job's step spent in all-reduce at its best placement, slowed by best/actual "
     "bandwidth elsewhere (default 0.15; 0: off)"},
    {"elastic-share", "F",
     "seeded share of multi-GPU jobs that are elastic down to half their size (default 0: none; e.g. 0.3; class rules "
     "override)"},
    {"elastic-scaling", "B",
     "elastic jobs of trace size g0 on g GPUs work at g0 x (g/g0)^B GPU-seconds per second (default 0.8; 1: linear)"},
    {"sample-interval", "S", "time-series step in seconds (default: makespan/1000)"},
    {"node-mtbf", "S", "random node failures: mean seconds between failures per node (default off)"},
    {"node-repair", "S", "seconds a failed node stays down (default 3600)"},
    {"no-reservation-wakeups", "", "do not run a pass at every reservation start"},
    {"json", "FILE", "write the JSON summary"},
    {"csv", "FILE", "write the time series (CSV)"},
    {"html", "FILE", "write the HTML report (charts by the dashboard's chart module, inlined)"},
    {"svg-dir", "DIR", "write each plot as DIR/<plot>.svg (for docs)"},
    {"jobs-csv", "FILE", "write one row per policy and job (start, end, wait, state, ...)"},
    {"out", "DIR", "write DIR/summary.json, DIR/series.csv and DIR/report.html"},
    {"decisions", "FILE", "write the decision log of the (first) policy (slow on big traces)"},
    {"check", "", "check the core's invariants after every pass (slow)"},
    {"pass-profile", "",
     "after the table, where each policy's replay time went: passes and seconds by pending jobs, by what asked for "
     "the pass, by the time since the last"},
    {"progress", "", "force the progress bar (default: when stderr is a terminal)"},
    {"quiet", "", "no progress bar"},
    {"help", "", "this help"},
};

constexpr const char* kSimUsage =
    "usage: phalanx sim --topology FILE --trace FILE [--policy P]... [options]\n"
    "\n"
    "Replays a trace through the Phalanx scheduling core on a simulated clock, once per policy,\n"
    "and prints the policies side by side: JCT (avg/p50/p99), wait (avg, by job size), bounded\n"
    "slowdown, makespan, large-job wait, utilization vs offered load, fragmentation, placement\n"
    "efficiency, preemptions, lost GPU-hours, resizes. Modelling choices: docs/simulator.md.\n"
    "\n"
    "options:\n";

Result<std::string> ReadFile(const std::string& path) { return ReadFileBounded(path, kMaxTraceBytes); }

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) return Fail(path, "cannot write");
  out << text;
  if (!out) return Fail(path, "write failed");
  return {};
}

Result<int64_t> Whole(const ParsedFlags& a, std::string_view name, int64_t fallback) {
  if (!a.Has(name)) return fallback;
  const std::string v = a.Get(name);
  const auto n = ParseNumber<int64_t>(v);
  if (!n || *n < 0) return Fail("", "option '--" + std::string(name) + "': '" + v + "' is not a whole number >= 0");
  return *n;
}

Result<WalltimeModel> ParseWalltime(const std::string& v) {
  WalltimeModel m;
  auto factor = [&](std::string_view f) -> Result<double> {
    const auto d = ParseNumber<double>(f);
    if (!d || *d < 1) return Fail("", "option '--walltime': factor '" + std::string(f) + "' must be a number >= 1");
    return *d;
  };
  if (v == "exact") return m;
  if (v == "model") {
    m.mode = WalltimeModel::Mode::kModel;
    return m;
  }
  if (v == "trace") {
    m.mode = WalltimeModel::Mode::kTrace;
    return m;
  }
  for (auto [prefix, mode] :
       {std::pair{"factor:", WalltimeModel::Mode::kFactor}, {"random:", WalltimeModel::Mode::kRandom}}) {
    if (v.starts_with(prefix)) {
      PHX_ASSIGN_OR_RETURN(auto f, factor(std::string_view(v).substr(std::string_view(prefix).size())));
      m.mode = mode;
      m.factor = f;
      return m;
    }
  }
  return Fail("", "option '--walltime': '" + v + "' (use model, exact, factor:F, random:F or trace)");
}

class ProgressBar {
 public:
  ProgressBar(bool on, std::string label) : on_(on), label_(std::move(label)) {}
  void operator()(double f) {
    if (!on_ || static_cast<int>(f * 100) == last_) return;
    last_ = static_cast<int>(f * 100);
    const int width = 30, fill = static_cast<int>(f * width + 0.5);
    std::fprintf(stderr, "\r%-22s [%s%s] %3d%%", label_.c_str(), std::string(fill, '#').c_str(),
                 std::string(width - fill, ' ').c_str(), static_cast<int>(f * 100 + 0.5));
    std::fflush(stderr);
  }
  void Done(double seconds) {
    if (on_) std::fprintf(stderr, "\r%-22s done in %.1fs%s\n", label_.c_str(), seconds, std::string(30, ' ').c_str());
  }

 private:
  bool on_;
  std::string label_;
  int last_ = -1;
};

}  // namespace

int RunSim(std::span<const std::string> raw) {
  auto args = ParseArgs(raw, kSimFlags);
  if (!args) {
    PrintError(args.error().ToString());
    return 2;
  }
  if (args->Has("help")) {
    std::fputs((std::string(kSimUsage) + FlagsHelp(kSimFlags)).c_str(), stdout);
    return 0;
  }
  if (!args->positional().empty()) {
    PrintError("sim takes no positional arguments, got '" + args->positional()[0] + "' (see phalanx sim --help)");
    return 2;
  }
  if (!args->Has("topology") || !args->Has("trace")) {
    PrintError("sim needs --topology FILE and --trace FILE (see phalanx sim --help)");
    return 2;
  }
  std::vector<std::string> policies = args->GetAll("policy");
  if (policies.empty()) {
    for (std::string_view p : PolicyPresetNames()) policies.emplace_back(p);
  }
  std::vector<SchedulerConfig> configs;
  for (const std::string& p : policies) {
    auto c = PolicyFromSpec(p);
    if (!c) {
      PrintError("option '--policy': " +
                 (c.error().where.starts_with("policy ") ? c.error().ToString() : c.error().message));
      return 2;
    }
    configs.push_back(*c);
  }
  SimOptions opt;
  for (const std::string& r : args->GetAll("class-rule")) {
    auto rule = ParseClassRule(r);
    if (!rule) {
      PrintError(rule.error().ToString());
      return 2;
    }
    opt.rules.push_back(*rule);
  }
  {
    auto w = ParseWalltime(args->Get("walltime", "model"));
    if (!w) {
      PrintError(w.error().ToString());
      return 2;
    }
    opt.walltime = *w;
  }
  auto seed = Whole(*args, "seed", 1);
  auto delay = Whole(*args, "checkpoint-delay", 30);
  auto restart = Whole(*args, "restart-overhead", 120);
  auto ckpt_every = Whole(*args, "checkpoint-interval", 3600);
  auto requeue = Whole(*args, "requeue-delay", 121);
  auto sample = Whole(*args, "sample-interval", 0);
  auto mtbf = Whole(*args, "node-mtbf", 0);
  auto repair = Whole(*args, "node-repair", 3600);
  for (const auto* r : {&seed, &delay, &restart, &ckpt_every, &requeue, &sample, &mtbf, &repair}) {
    if (!*r) {
      PrintError(r->error().ToString());
      return 2;
    }
  }
  opt.seed = static_cast<uint64_t>(*seed);
  opt.checkpoint_delay = *delay;
  opt.restart_overhead = *restart;
  opt.checkpoint_interval = *ckpt_every;
  opt.requeue_delay = *requeue;
  if (args->Has("checkpoint-answer")) {
    const std::string v = args->Get("checkpoint-answer");
    const auto a = ParseNumber<double>(v);
    if (!a || !(*a >= 0 && *a <= 1)) {
      PrintError("option '--checkpoint-answer': '" + v + "' is not a number in [0, 1]");
      return 2;
    }
    opt.checkpoint_answer_share = *a;
  }
  opt.comm_share = 0.15;
  if (args->Has("comm-share")) {
    const std::string v = args->Get("comm-share");
    const auto c = ParseNumber<double>(v);
    if (!c || *c < 0 || *c >= 1) {
      PrintError("option '--comm-share': '" + v + "' is not a number in [0, 1)");
      return 2;
    }
    opt.comm_share = *c;
  }
  opt.elastic_share = kDefaultElasticShare;
  opt.elastic_scaling = 0.8;
  for (const auto& [flag, value, lo, hi] : {std::tuple{"elastic-share", &opt.elastic_share, 0.0, 1.0},
                                            std::tuple{"elastic-scaling", &opt.elastic_scaling, 0.0, 1.0}}) {
    if (!args->Has(flag)) continue;
    const std::string v = args->Get(flag);
    const auto d = ParseNumber<double>(v);
    if (!d || !(*d >= lo && *d <= hi)) {
      PrintError(std::string("option '--") + flag + "': '" + v + "' is not a number in [0, 1]");
      return 2;
    }
    *value = *d;
  }
  opt.sample_interval = *sample;
  opt.node_mtbf = *mtbf;
  opt.node_repair = *repair;
  opt.wake_for_reservations = !args->Has("no-reservation-wakeups");
  opt.check_invariants = args->Has("check");
  if (args->Has("pass-profile")) {
    opt.pass_clock = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
  }

  // Inputs.
  const std::string trace_path = args->Get("trace"), topo_path = args->Get("topology");
  auto text = ReadFile(trace_path);
  if (!text) {
    PrintError(text.error().ToString());
    return 1;
  }
  auto trace = ReadTrace(*text, trace_path);
  if (!trace) {
    PrintError(trace.error().ToString());
    return 1;
  }
  if (args->Has("window")) {
    const std::string w = args->Get("window");
    const size_t colon = w.find(':');
    const auto a = ParseNumber<int64_t>(std::string_view(w).substr(0, colon));
    const auto b =
        colon == std::string::npos ? std::nullopt : ParseNumber<int64_t>(std::string_view(w).substr(colon + 1));
    if (!a || !b || *a < 0 || *b <= *a) {
      PrintError("option '--window': '" + w + "' is not A:B with 0 <= A < B");
      return 2;
    }
    *trace = WindowTrace(std::move(*trace), *a, *b);
  }
  if (args->Has("load-scale")) {
    const std::string v = args->Get("load-scale");
    const auto f = ParseNumber<double>(v);
    if (!f || *f <= 0) {
      PrintError("option '--load-scale': '" + v + "' is not a number > 0");
      return 2;
    }
    *trace = ScaleArrivals(std::move(*trace), *f);
  }
  if (trace->jobs.empty()) {
    PrintError(trace_path + ": no jobs to replay");
    return 1;
  }
  auto topo = LoadTopologyFile(topo_path, LoadOptions{});
  if (!topo) {
    PrintError(topo.error().ToString());
    return 1;
  }

  const bool bar = !args->Has("quiet") && (args->Has("progress") || isatty(STDERR_FILENO));
  std::vector<PolicyRun> runs;
  for (size_t k = 0; k < configs.size(); ++k) {
    SimOptions o = opt;
    o.record_decisions = k == 0 && args->Has("decisions");
    ProgressBar progress(bar, configs[k].name);
    o.progress = [&progress](double f) { progress(f); };
    const auto t0 = std::chrono::steady_clock::now();
    auto r = Simulate(*trace, *topo, configs[k], o);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    progress.Done(secs);
    if (!r) {
      PrintError(configs[k].name + ": " + r.error().ToString());
      return 1;
    }
    if (o.record_decisions) {
      if (auto s = WriteFile(args->Get("decisions"), r->decision_log); !s) {
        PrintError(s.error().ToString());
        return 1;
      }
    }
    PolicyRun run;
    run.summary = Summarize(r->policy, r->jobs, r->series, r->counters, r->cluster_gpus);
    run.result = std::move(*r);
    run.wall_s = secs;
    runs.push_back(std::move(run));
  }

  ReportInfo info;
  info.trace = ReportPath(trace_path);
  info.topology = ReportPath(topo_path);
  info.jobs = trace->jobs.size();
  info.gpus = runs.front().result.cluster_gpus;
  std::string settings = "walltime " + args->Get("walltime", "model") + ", seed " + std::to_string(opt.seed);
  if (args->Has("window")) settings += ", window " + args->Get("window");
  if (args->Has("load-scale")) settings += ", load x" + args->Get("load-scale");
  settings += opt.comm_share > 0 ? ", comm share " + args->Get("comm-share", "0.15") : ", runtime model off";
  if (opt.elastic_share > 0) {
    settings += ", elastic share " + args->Get("elastic-share", FormatShare(kDefaultElasticShare)) + " (scaling " +
                args->Get("elastic-scaling", "0.8") + ")";
  }
  for (const ClassRule& r : opt.rules) settings += ", rule " + r.text;
  info.settings = settings;
  std::fputs(FormatTable(info, runs).c_str(), stdout);
  for (const PolicyRun& run : runs) {
    if (run.result.pass_profile)
      std::fputs(("\n" + FormatPassProfile(run.result.policy, *run.result.pass_profile)).c_str(), stdout);
  }

  std::string json = args->Get("json"), csv = args->Get("csv"), html = args->Get("html");
  if (args->Has("out")) {
    const std::string dir = args->Get("out");
    if (json.empty()) json = dir + "/summary.json";
    if (csv.empty()) csv = dir + "/series.csv";
    if (html.empty()) html = dir + "/report.html";
  }
  for (auto [path, make] : {std::pair{json, &FormatJson}, {html, &FormatHtml}}) {
    if (path.empty()) continue;
    if (auto s = WriteFile(path, make(info, runs)); !s) {
      PrintError(s.error().ToString());
      return 1;
    }
  }
  if (args->Has("svg-dir")) {
    for (const auto& [name, svg] : FormatPlots(runs)) {
      if (auto s = WriteFile(args->Get("svg-dir") + "/" + name + ".svg", svg); !s) {
        PrintError(s.error().ToString());
        return 1;
      }
    }
  }
  if (args->Has("jobs-csv")) {
    if (auto s = WriteFile(args->Get("jobs-csv"), FormatJobsCsv(runs)); !s) {
      PrintError(s.error().ToString());
      return 1;
    }
  }
  if (!csv.empty()) {
    if (auto s = WriteFile(csv, FormatCsv(runs)); !s) {
      PrintError(s.error().ToString());
      return 1;
    }
  }
  return 0;
}

}  // namespace phalanx::cli
