#include "sim/scenario.h"

#include <charconv>
#include <map>
#include <sstream>
#include <vector>

#include "core/sched/scheduler.h"
#include "core/topology/node_models.h"

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
      if (auto s = Line(words); !s) return std::unexpected(s.error());
    }
    if (!sched_) return Fail(std::string(file_), "no 'topology' line");
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
    return Err("unknown statement '" + std::string(w[0]) + "' (topology, policy, set, at)");
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
      auto v = Int(key, value);
      if (!v) return std::unexpected(v.error());
      if (key == "max_running_gpus") l->max_running_gpus = static_cast<uint32_t>(*v);
      else if (key == "max_pending_jobs") l->max_pending_jobs = static_cast<uint32_t>(*v);
      else return Err("unknown limit '" + std::string(key) + "'");
    }
    return {};
  }

  // shares account=NAME N   |   shares half_life=SECONDS
  Status Shares(const std::vector<std::string_view>& w) {
    if (sched_) return Err("'shares' must come before the first event");
    auto [key, value] = KeyValue(w.size() > 1 ? w[1] : std::string_view());
    if (key == "half_life" && w.size() == 2) {
      auto v = Int(key, value);
      if (!v) return std::unexpected(v.error());
      config_.fairshare.half_life = *v;
      return {};
    }
    if (key != "account" || value.empty() || w.size() != 3) return Err("usage: shares account=NAME N | shares half_life=S");
    auto n = Int("shares", w[2]);
    if (!n) return std::unexpected(n.error());
    config_.fairshare.accounts.push_back({std::string(value), static_cast<double>(*n), {}});
    return {};
  }

  Status At(const std::vector<std::string_view>& w) {
    if (w.size() < 3) return Err("usage: at TIME EVENT ...");
    auto t = Int("time", w[1]);
    if (!t) return std::unexpected(t.error());
    if (!sched_) {
      if (!topo_) return Err("'topology' must come before the first event");
      auto s = Scheduler::Create(std::move(*topo_), config_);
      if (!s) return Err(s.error().ToString());
      sched_ = std::move(*s);
    }
    const Time now = *t;
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
      for (const Decision& d : sched_->Schedule(now)) Print(d);
    } else if (ev == "submit") {
      auto spec = Spec(kv, flags, now);
      if (!spec) return std::unexpected(spec.error());
      st = sched_->Submit(std::move(*spec), now);
    } else if (ev == "node") {
      if (flags.size() != 2) return Err("usage: at T node NAME up|drain|down");
      const NodeState s = flags[1] == "up" ? NodeState::kUp : flags[1] == "drain" ? NodeState::kDrain : NodeState::kDown;
      if (flags[1] != "up" && flags[1] != "drain" && flags[1] != "down") return Err("node state: up, drain or down");
      st = sched_->SetNodeState(flags[0], s, now);
    } else {
      auto id = Int("id", kv["id"]);
      if (!id) return std::unexpected(id.error());
      const JobId job = static_cast<JobId>(*id);
      if (ev == "cancel") st = sched_->Cancel(job, now);
      else if (ev == "hold") st = sched_->Hold(job, now);
      else if (ev == "release") st = sched_->Release(job, now);
      else if (ev == "update") {
        auto t = Int("time", kv["time"]);
        if (!t) return std::unexpected(t.error());
        Scheduler::JobUpdate u;
        u.walltime = static_cast<Duration>(*t);
        st = sched_->Update(job, u, now);
      } else if (ev == "end") st = sched_->JobEnded(job, now, std::find(flags.begin(), flags.end(), "fail") == flags.end());
      else if (ev == "checkpoint") {
        auto epoch = Int("epoch", kv["epoch"]);
        if (!epoch) return std::unexpected(epoch.error());
        st = sched_->CheckpointDone(job, now, static_cast<uint64_t>(*epoch), std::string(kv["path"]));
      } else {
        return Err("unknown event '" + std::string(ev) + "'");
      }
    }
    if (!st) {
      // Refused events are part of the behaviour under test: log them.
      log_ << "t=" << now << " refused " << ev << ": " << st.error().ToString() << "\n";
    }
    if (std::string bad = sched_->CheckInvariants(); !bad.empty()) return Err("invariant broken:\n" + bad);
    return {};
  }

  Result<JobSpec> Spec(std::map<std::string_view, std::string_view>& kv, const std::vector<std::string_view>& flags, Time now) {
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
          auto n = Int(k, v);
          if (!n) return std::unexpected(n.error());
          s.step_kind = ElasticStep::kMultiple;
          s.step = static_cast<uint32_t>(*n);
        }
      } else if (k == "after") {
        for (std::string_view rest = v; !rest.empty();) {
          const size_t c = rest.find(',');
          auto n = Int(k, rest.substr(0, c));
          if (!n) return std::unexpected(n.error());
          s.after_ok.push_back(static_cast<JobId>(*n));
          rest = c == std::string_view::npos ? std::string_view() : rest.substr(c + 1);
        }
      } else if (k == "preemptible") {
        s.preemptible = v == "yes";
      } else {
        auto n = Int(k, v);
        if (!n) return std::unexpected(n.error());
        if (k == "id") s.id = static_cast<JobId>(*n);
        else if (k == "gpus") s.shape.gpus = static_cast<uint32_t>(*n);
        else if (k == "min") s.min_gpus = static_cast<uint32_t>(*n);
        else if (k == "nodes") s.shape.nodes = static_cast<uint32_t>(*n);
        else if (k == "gpn") s.shape.gpus_per_node = static_cast<uint32_t>(*n);
        else if (k == "time") s.walltime = *n;
        else if (k == "ckpt_every") s.checkpoint_interval = *n;
        else if (k == "restart") s.restart_cost = *n;
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
    int64_t v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || p != text.data() + text.size()) {
      return Err(std::string(field) + ": '" + std::string(text) + "' is not an integer");
    }
    return v;
  }
  std::unexpected<Error> Err(std::string message) const { return Fail(where_, std::move(message)); }

  std::string_view file_;
  std::string where_;
  std::unique_ptr<Topology> topo_;
  SchedulerConfig config_;
  std::unique_ptr<Scheduler> sched_;
  std::ostringstream log_;
  std::map<JobId, std::string> last_wait_;
};

}  // namespace

Result<std::string> RunScenario(std::string_view text, std::string_view filename) { return Runner(filename).Run(text); }

}  // namespace phalanx
