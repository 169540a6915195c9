#include "sim/scenario.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "core/sched/scheduler.h"
#include "core/topology/node_models.h"
#include "util/numbers.h"

namespace phalanx {
namespace {

std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

class Runner {
 public:
  explicit Runner(std::string_view filename) : file_(filename) {}

  Result<std::string> Run(std::string_view text) {
    size_t pos = 0;
    int line_no = 0;
    while (pos <= text.size()) {
      const size_t nl = text.find('\n', pos);
      std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
      pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
      ++line_no;
      where_ = std::string(file_) + ":" + std::to_string(line_no);
      if (const size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
      const auto words = Words(line);
      if (words.empty()) continue;
      PHX_RETURN_IF_ERROR(Line(words));
    }
    if (!sched_) return Fail(std::string(file_), "no 'topology' line");
    // Whole-run expectations: over every decision of the run, in file order.
    for (const Expectation& e : expects_) {
      PHX_RETURN_IF_ERROR(CheckDecisions(e));
    }
    log_ << "final:";
    for (const auto& [id, job] : sched_->jobs()) {
      log_ << " " << id << "=" << JobStateName(job.state);
      if (!job.gpus.empty()) log_ << "[" << job.gpus.size() << "]";
    }
    log_ << "\n";
    return log_.str();
  }

 private:
  Status Line(const std::vector<std::string_view>& w) {
    if (w[0] == "topology") {
      if (w.size() != 2) return Err("usage: topology gen:NAME");
      std::string_view what = w[1];
      if (what.starts_with("gen:")) what.remove_prefix(4);
      auto spec = GenerateByName(what);
      if (!spec) return Err(spec.error().message);
      auto topo = Topology::Build(*spec);
      if (!topo) return Err(topo.error().ToString());
      topo_ = std::make_unique<Topology>(std::move(*topo));
      return {};
    }
    if (w[0] == "policy") {
      if (w.size() != 2) return Err("usage: policy NAME");
      auto c = PolicyPreset(w[1]);
      if (!c) return Err(c.error().message);
      config_ = *c;
      return {};
    }
    if (w[0] == "set") return Set(w);
    if (w[0] == "limit") return Limit(w);
    if (w[0] == "shares") return Shares(w);
    if (w[0] == "at") return At(w);
    if (w[0] == "expect") {
      PHX_ASSIGN_OR_RETURN(auto e, ParseExpect(w, 1, false));
      expects_.push_back(std::move(e));
      return {};
    }
    return Err("unknown statement '" + std::string(w[0]) + "' (topology, policy, set, limit, shares, at, expect)");
  }

  Status Set(const std::vector<std::string_view>& w) {
    if (sched_) return Err("'set' must come before the first event");
    for (size_t i = 1; i < w.size(); ++i) {
      auto [key, value] = KeyValue(w[i]);
      if (auto s = SetConfigOption(config_, key, value); !s) return Err(s.error().where + ": " + s.error().message);
    }
    return {};
  }

  // limit user=NAME|account=NAME|default-user|default-account max_running_gpus=N max_pending_jobs=N
  Status Limit(const std::vector<std::string_view>& w) {
    if (sched_) return Err("'limit' must come before the first event");
    if (w.size() < 3) return Err("usage: limit user=NAME|account=NAME|default-user|default-account KEY=N...");
    auto [who, name] = KeyValue(w[1]);
    Limits* l = nullptr;
    if (who == "user" && !name.empty()) l = &config_.limits.users[std::string(name)];
    else if (who == "account" && !name.empty()) l = &config_.limits.accounts[std::string(name)];
    else if (who == "default-user") l = &config_.limits.default_user;
    else if (who == "default-account") l = &config_.limits.default_account;
    else return Err("limit: user=NAME, account=NAME, default-user or default-account");
    for (size_t i = 2; i < w.size(); ++i) {
      auto [key, value] = KeyValue(w[i]);
      PHX_ASSIGN_OR_RETURN(auto v, Int(key, value));
      if (key == "max_running_gpus") l->max_running_gpus = static_cast<uint32_t>(v);
      else if (key == "max_pending_jobs") l->max_pending_jobs = static_cast<uint32_t>(v);
      else return Err("unknown limit '" + std::string(key) + "'");
    }
    return {};
  }

  // shares account=NAME N   |   shares half_life=SECONDS
  Status Shares(const std::vector<std::string_view>& w) {
    if (sched_) return Err("'shares' must come before the first event");
    auto [key, value] = KeyValue(w.size() > 1 ? w[1] : std::string_view());
    if (key == "half_life" && w.size() == 2) {
      PHX_ASSIGN_OR_RETURN(auto v, Int(key, value));
      config_.fairshare.half_life = v;
      return {};
    }
    if (key != "account" || value.empty() || w.size() != 3)
      return Err("usage: shares account=NAME N | shares half_life=S");
    PHX_ASSIGN_OR_RETURN(auto n, Int("shares", w[2]));
    config_.fairshare.accounts.push_back({std::string(value), static_cast<double>(n), {}});
    return {};
  }

  Status At(const std::vector<std::string_view>& w) {
    if (w.size() < 3) return Err("usage: at TIME EVENT ...");
    PHX_ASSIGN_OR_RETURN(auto t, Int("time", w[1]));
    if (w[2] == "expect") return AtExpect(w, t);
    if (!sched_) {
      if (!topo_) return Err("'topology' must come before the first event");
      auto s = Scheduler::Create(std::move(*topo_), config_);
      if (!s) return Err(s.error().ToString());
      sched_ = std::move(*s);
    }
    const Time now = t;
    const std::string_view ev = w[2];
    std::map<std::string_view, std::string_view> kv;
    std::vector<std::string_view> flags;
    for (size_t i = 3; i < w.size(); ++i) {
      auto [k, v] = KeyValue(w[i]);
      if (v.empty() && w[i].find('=') == std::string_view::npos) flags.push_back(k);
      else kv[k] = v;
    }
    Status st;
    if (ev == "schedule") {
      for (const Decision& d : sched_->Schedule(now)) {
        Print(d);
        if (d.kind != DecisionKind::kWait) decisions_.push_back(d);
      }
    } else if (ev == "submit") {
      PHX_ASSIGN_OR_RETURN(auto spec, Spec(kv, flags, now));
      st = sched_->Submit(std::move(spec), now);
    } else if (ev == "node") {
      if (flags.size() != 2) return Err("usage: at T node NAME up|drain|down");
      const NodeState s = flags[1] == "up"      ? NodeState::kUp
                          : flags[1] == "drain" ? NodeState::kDrain
                                                : NodeState::kDown;
      if (flags[1] != "up" && flags[1] != "drain" && flags[1] != "down") return Err("node state: up, drain or down");
      st = sched_->SetNodeState(flags[0], s, now);
    } else {
      PHX_ASSIGN_OR_RETURN(auto id, Int("id", kv["id"]));
      const JobId job = static_cast<JobId>(id);
      if (ev == "cancel") st = sched_->Cancel(job, now);
      else if (ev == "hold") st = sched_->Hold(job, now);
      else if (ev == "release") st = sched_->Release(job, now);
      else if (ev == "update") {
        PHX_ASSIGN_OR_RETURN(auto t, Int("time", kv["time"]));
        Scheduler::JobUpdate u;
        u.walltime = static_cast<Duration>(t);
        st = sched_->Update(job, u, now);
      } else if (ev == "end")
        st = sched_->JobEnded(job, now, std::find(flags.begin(), flags.end(), "fail") == flags.end());
      else if (ev == "checkpoint") {
        PHX_ASSIGN_OR_RETURN(auto epoch, Int("epoch", kv["epoch"]));
        st = sched_->CheckpointDone(job, now, static_cast<uint64_t>(epoch), std::string(kv["path"]));
      } else {
        return Err("unknown event '" + std::string(ev) + "'");
      }
    }
    last_event_time_ = now;
    last_event_where_ = where_;
    last_event_refused_ = !st;
    if (!st) {
      // Refused events are part of the behaviour under test: log them.
      log_ << "t=" << now << " refused " << ev << ": " << st.error().ToString() << "\n";
    }
    if (std::string bad = sched_->CheckInvariants(); !bad.empty()) return Err("invariant broken:\n" + bad);
    return {};
  }

  // ---- expectations (docs/scheduling.md#expectations) -------------------------------------
  // `expect KIND id=N ...` (whole run: checked after the last line against every decision) and
  // `at T expect STATE id=N ...` (checked where it stands against the core's state). They print
  // nothing: a regenerated .expected file cannot make a failing one pass.
  struct Expectation {
    std::string where;  // file:line
    std::string text;   // the line as written
    bool at_time = false;
    // Whole-run forms.
    DecisionKind kind = DecisionKind::kWait;
    bool negated = false;  // no-KIND
    Time from = std::numeric_limits<Time>::min(), to = std::numeric_limits<Time>::max();
    std::optional<JobId> for_job;
    std::optional<uint32_t> times;
    // `at T` forms.
    bool refused = false;  // at T expect refused
    JobState state = JobState::kPending;
    std::optional<WaitKind> wait;
    std::optional<Time> predicted_start;
    // Both.
    JobId job = kNoJob;
    std::optional<uint32_t> gpus;
    DomainId on;
  };

  // The enumerator of E from 0 to `last` that name_of calls `name`.
  template <typename E>
  static std::optional<E> ByName(std::string_view (*name_of)(E), E last, std::string_view name) {
    for (int k = 0; k <= static_cast<int>(last); ++k) {
      if (name_of(static_cast<E>(k)) == name) return static_cast<E>(k);
    }
    return std::nullopt;
  }

  static std::string Join(const std::vector<std::string_view>& w) {
    std::string out;
    for (std::string_view x : w) out += (out.empty() ? "" : " ") + std::string(x);
    return out;
  }

  // w[first] is the word after `expect`.
  Result<Expectation> ParseExpect(const std::vector<std::string_view>& w, size_t first, bool at_time) {
    Expectation e;
    e.where = where_;
    e.text = Join(w);
    e.at_time = at_time;
    const Topology* topo = sched_ ? &sched_->topology() : topo_.get();
    if (!topo) return Err("'topology' must come before the first 'expect'");
    if (w.size() <= first) return Err("usage: expect KIND id=N ... | at T expect STATE id=N ...");
    std::string_view what = w[first];
    // Every decision kind but kWait (the last) is an expectation; every job state is.
    auto kind_named = [](std::string_view name) { return ByName(DecisionKindName, DecisionKind::kKill, name); };
    auto state_named = [](std::string_view name) { return ByName(JobStateName, JobState::kKilled, name); };
    if (at_time) {
      if (what == "refused") {
        if (w.size() != first + 1) return Err("usage: at T expect refused (nothing after it)");
        e.refused = true;
        return e;
      }
      const std::optional<JobState> state = state_named(what);
      if (!state) {
        if (kind_named(what) || (what.starts_with("no-") && kind_named(what.substr(3)))) {
          return Err("'" + std::string(what) + "' is a decision, checked over the whole run: write 'expect " +
                     std::string(what) + " id=N at=T' without 'at T'");
        }
        return Err(
            "unknown expectation 'at T expect " + std::string(what) +
            "' (a job state: pending, running, checkpointing, completed, failed, cancelled, killed; or refused)");
      }
      e.state = *state;
    } else {
      if (what.starts_with("no-")) {
        e.negated = true;
        what.remove_prefix(3);
      }
      const std::optional<DecisionKind> kind = kind_named(what);
      if (!kind) {
        if (state_named(w[first])) {
          return Err("'" + std::string(w[first]) + "' is a job state, checked at a time: write 'at T expect " +
                     std::string(w[first]) + " id=N'");
        }
        return Err(
            "unknown expectation 'expect " + std::string(w[first]) +
            "' (a decision: start, checkpoint, preempt, resize, kill, or no-KIND; job states take 'at T expect')");
      }
      e.kind = *kind;
    }
    const bool placed =
        at_time ? HoldsGpus(e.state) : (e.kind == DecisionKind::kStart || e.kind == DecisionKind::kResize);
    const bool has_for = !at_time && (e.kind == DecisionKind::kCheckpoint || e.kind == DecisionKind::kPreempt ||
                                      e.kind == DecisionKind::kResize);
    std::map<std::string_view, bool> seen;
    for (size_t i = first + 1; i < w.size(); ++i) {
      auto [key, value] = KeyValue(w[i]);
      if (w[i].find('=') == std::string_view::npos) return Err("expect: '" + std::string(w[i]) + "' is not KEY=VALUE");
      if (seen[key]) return Err("expect: '" + std::string(key) + "=' given twice");
      seen[key] = true;
      auto unfit = [&] {
        return Err("expect: '" + std::string(key) + "=' does not apply to '" + std::string(w[first]) + "'");
      };
      if (key == "on") {
        if (!placed) return unfit();
        e.on = topo->find(value);
        if (!e.on.valid()) return Err("expect: on=" + std::string(value) + ": no such domain or node in the topology");
        continue;
      }
      if (key == "wait") {
        if (!at_time || e.state != JobState::kPending) return unfit();
        e.wait = ByName(WaitKindName, kLastWaitKind, value);
        if (!e.wait)
          return Err("expect: wait=" + std::string(value) +
                     ": not a wait reason (Priority, Resources, TopologyBlock, "
                     "ReservedFor, UserLimit, AccountLimit, Held, Dependency, Unsatisfiable, Preempting)");
        continue;
      }
      static constexpr std::string_view kIntKeys[] = {"id",  "gpus",   "start", "at",   "at<",
                                                      "at>", "before", "for",   "times"};
      if (std::find(std::begin(kIntKeys), std::end(kIntKeys), key) == std::end(kIntKeys)) {
        return Err("expect: unknown field '" + std::string(key) + "'");
      }
      PHX_ASSIGN_OR_RETURN(auto n, Int(key, value));
      if (key == "id") {
        if (n <= 0) return Err("expect: id must be positive");
        e.job = static_cast<JobId>(n);
      } else if (key == "gpus") {
        if (!placed) return unfit();
        e.gpus = static_cast<uint32_t>(n);
      } else if (key == "start") {
        if (!at_time || e.state != JobState::kPending) return unfit();
        e.predicted_start = n;
      } else if (key == "at" || key == "at<" || key == "at>" || key == "before") {
        if (at_time) return unfit();
        // before=N is at<=N-1; no time is before the earliest one.
        if (key == "before" && n == std::numeric_limits<Time>::min()) {
          return Err("expect: the time filters leave no time");
        }
        if (key != "at>") e.to = std::min(e.to, key == "before" ? n - 1 : n);
        if (key == "at" || key == "at>") e.from = std::max(e.from, n);
      } else if (key == "for") {
        if (!has_for) return unfit();
        e.for_job = static_cast<JobId>(n);
      } else if (key == "times") {
        if (at_time || e.negated) return unfit();
        if (n < 1) return Err("expect: times= must be at least 1 (write no-" + std::string(what) + " for none)");
        e.times = static_cast<uint32_t>(n);
      }
    }
    if (e.job == kNoJob) return Err("expect: id=N is required");
    if (e.from > e.to) return Err("expect: the time filters leave no time");
    return e;
  }

  // at T expect ...: checked now, against the state the lines above left.
  Status AtExpect(const std::vector<std::string_view>& w, Time t) {
    if (!sched_)
      return Err("'at T expect' needs an event before it (for the whole run, write 'expect' without 'at T')");
    if (t != last_event_time_) {
      return Err("at " + std::to_string(t) + " expect: the last event was at " + std::to_string(last_event_time_) +
                 "; the check sees the state those lines left, so write 'at " + std::to_string(last_event_time_) +
                 " expect'");
    }
    PHX_ASSIGN_OR_RETURN(auto e, ParseExpect(w, 3, true));
    if (e.refused) {
      if (last_event_refused_) return {};
      return Fail(e.where,
                  "expectation failed: '" + e.text + "'; saw: the event at " + last_event_where_ + " was accepted");
    }
    const JobRecord* job = sched_->job(e.job);
    std::string why;
    if (!job) {
      why = "no job " + std::to_string(e.job) + " (never submitted, or its submit was refused)";
    } else if (job->state != e.state) {
      why = "its state";
    } else if (e.gpus && job->gpus.size() != *e.gpus) {
      why = "its GPU count";
    } else if (e.on.valid() && !std::all_of(job->gpus.begin(), job->gpus.end(),
                                            [&](GpuId g) { return sched_->topology().contains(e.on, g); })) {
      why = "where it runs";
    } else if (e.wait && job->wait.kind != *e.wait) {
      why = "its wait reason";
    } else if (e.predicted_start && job->wait.predicted_start != *e.predicted_start) {
      why = "its predicted start";
    } else {
      return {};
    }
    if (job) why = Describe(*job) + " (" + why + " differs)";
    return Fail(e.where, "expectation failed: '" + e.text + "'; saw: " + why);
  }

  std::string Describe(const JobRecord& job) const {
    std::string out = "job " + std::to_string(job.spec.id) + " " + std::string(JobStateName(job.state));
    if (!job.gpus.empty()) {
      out += " on " + FormatGpus(job.gpus, sched_->topology()) + " (" + std::to_string(job.gpus.size()) + " GPUs)";
    }
    if (job.state == JobState::kPending) out += ", wait " + job.wait.ToString();
    return out;
  }

  // Whether a decision's reason names job `id` as the one it makes room for ("... for job 10 ...").
  static bool ForJob(const std::string& reason, JobId id) {
    const std::string needle = "for job " + std::to_string(id);
    for (size_t p = reason.find(needle); p != std::string::npos; p = reason.find(needle, p + 1)) {
      const size_t end = p + needle.size();
      if (end == reason.size() || reason[end] < '0' || reason[end] > '9') return true;
    }
    return false;
  }

  Status CheckDecisions(const Expectation& e) const {
    if (!sched_->job(e.job)) {
      return Fail(e.where, "expectation failed: '" + e.text + "'; saw: no job " + std::to_string(e.job) +
                               " (never submitted, or its submit was refused)");
    }
    const Topology& topo = sched_->topology();
    std::vector<const Decision*> same_kind, matching;
    for (const Decision& d : decisions_) {
      if (d.job != e.job || d.kind != e.kind) continue;
      same_kind.push_back(&d);
      if (d.at < e.from || d.at > e.to) continue;
      if (e.gpus && d.gpus.size() != *e.gpus) continue;
      if (e.on.valid() && !std::all_of(d.gpus.begin(), d.gpus.end(), [&](GpuId g) { return topo.contains(e.on, g); }))
        continue;
      if (e.for_job && !ForJob(d.reason, *e.for_job)) continue;
      matching.push_back(&d);
    }
    const bool ok = e.negated ? matching.empty() : e.times ? matching.size() == *e.times : !matching.empty();
    if (ok) return {};
    // What was seen: for no-KIND the decisions that match; for times=N how many match, and
    // which; otherwise every KIND decision of the job.
    std::string saw;
    auto list = [&](const std::vector<const Decision*>& ds) {
      for (const Decision* d : ds) saw += (saw.empty() ? "" : "; ") + FormatDecision(*d, topo);
    };
    if (e.negated) {
      list(matching);
    } else if (e.times) {
      saw = std::to_string(matching.size()) + " matching";
      list(matching);
    } else if (same_kind.empty()) {
      saw = "no " + std::string(DecisionKindName(e.kind)) + " decision for job " + std::to_string(e.job);
    } else {
      list(same_kind);
    }
    return Fail(e.where, "expectation failed: '" + e.text + "'; saw: " + saw);
  }

  Result<JobSpec> Spec(std::map<std::string_view, std::string_view>& kv, const std::vector<std::string_view>& flags,
                       Time now) {
    JobSpec s;
    s.submit = now;
    s.user = "user";
    s.account = "default";
    for (const auto& [k, v] : kv) {
      if (k == "user") s.user = std::string(v);
      else if (k == "account") s.account = std::string(v);
      else if (k == "class") s.priority_class = std::string(v);
      else if (k == "name") s.name = std::string(v);
      else if (k == "level") {
        auto l = ParseLevel(v);
        if (!l) return Err("unknown level '" + std::string(v) + "'");
        s.shape.level = *l;
        if (s.shape.fit == FitMode::kAny) s.shape.fit = FitMode::kRequire;
      } else if (k == "fit") {
        if (v == "any") s.shape.fit = FitMode::kAny;
        else if (v == "prefer") s.shape.fit = FitMode::kPrefer;
        else if (v == "require") s.shape.fit = FitMode::kRequire;
        else return Err("fit: any, prefer or require");
      } else if (k == "step") {
        if (v == "pow2") s.step_kind = ElasticStep::kPowerOfTwo;
        else {
          PHX_ASSIGN_OR_RETURN(auto n, Int(k, v));
          s.step_kind = ElasticStep::kMultiple;
          s.step = static_cast<uint32_t>(n);
        }
      } else if (k == "after") {
        for (std::string_view rest = v; !rest.empty();) {
          const size_t c = rest.find(',');
          PHX_ASSIGN_OR_RETURN(auto n, Int(k, rest.substr(0, c)));
          s.after_ok.push_back(static_cast<JobId>(n));
          rest = c == std::string_view::npos ? std::string_view() : rest.substr(c + 1);
        }
      } else if (k == "preemptible") {
        s.preemptible = v == "yes";
      } else {
        PHX_ASSIGN_OR_RETURN(auto n, Int(k, v));
        if (k == "id") s.id = static_cast<JobId>(n);
        else if (k == "gpus") s.shape.gpus = static_cast<uint32_t>(n);
        else if (k == "min") s.min_gpus = static_cast<uint32_t>(n);
        else if (k == "nodes") s.shape.nodes = static_cast<uint32_t>(n);
        else if (k == "gpn") s.shape.gpus_per_node = static_cast<uint32_t>(n);
        else if (k == "time") s.walltime = n;
        else if (k == "ckpt_every") s.checkpoint_interval = n;
        else if (k == "restart") s.restart_cost = n;
        else return Err("unknown submit field '" + std::string(k) + "'");
      }
    }
    for (std::string_view f : flags) {
      if (f == "exclusive") s.shape.exclusive = true;
      else if (f == "rails") s.shape.rail_aligned = true;
      else if (f == "hold") s.held = true;
      else return Err("unknown submit flag '" + std::string(f) + "'");
    }
    return s;
  }

  void Print(const Decision& d) {
    if (d.kind == DecisionKind::kWait) {
      std::string& last = last_wait_[d.job];
      const std::string now = d.wait.ToString();
      if (now == last) return;
      last = now;
    } else {
      last_wait_.erase(d.job);
    }
    log_ << FormatDecision(d, sched_->topology()) << "\n";
  }

  static std::pair<std::string_view, std::string_view> KeyValue(std::string_view word) {
    const size_t eq = word.find('=');
    if (eq == std::string_view::npos) return {word, {}};
    return {word.substr(0, eq), word.substr(eq + 1)};
  }
  Result<int64_t> Int(std::string_view field, std::string_view text) {
    if (const auto v = ParseNumber<int64_t>(text)) return *v;
    return Err(std::string(field) + ": '" + std::string(text) + "' is not an integer");
  }
  std::unexpected<Error> Err(std::string message) const { return Fail(where_, std::move(message)); }

  std::string_view file_;
  std::string where_;
  std::unique_ptr<Topology> topo_;
  SchedulerConfig config_;
  std::unique_ptr<Scheduler> sched_;
  std::ostringstream log_;
  std::map<JobId, std::string> last_wait_;
  std::vector<Decision> decisions_;   // every decision but waits, for the expectations
  std::vector<Expectation> expects_;  // whole-run ones, checked after the last line
  Time last_event_time_ = 0;
  std::string last_event_where_;
  bool last_event_refused_ = false;
};

}  // namespace

Result<std::string> RunScenario(std::string_view text, std::string_view filename) { return Runner(filename).Run(text); }

}  // namespace phalanx
