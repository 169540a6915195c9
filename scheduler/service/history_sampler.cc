#include "service/history_sampler.h"

#include <chrono>

#include "util/log.h"

namespace phalanx::service {

std::string SeriesName(const std::string& prefix, const std::string& label) {
  std::string name = prefix + "." + (label.empty() ? std::string("-") : label);
  for (char& ch : name) {
    if (ch == ',' || ch == '*') ch = '_';
  }
  if (name.size() > 200) name.resize(200);
  return name;
}

HistorySampler::HistorySampler(boost::asio::io_context& io, Controller* controller, store::GroupCommitter* committer,
                               HistoryOptions options)
    : controller_(controller),
      committer_(committer),
      options_(options),
      timer_(io),
      best_(controller->core().topology()) {}

void HistorySampler::Start() { Arm(); }

void HistorySampler::Stop() {
  stopped_ = true;
  timer_.cancel();
}

void HistorySampler::Arm() {
  if (stopped_) return;
  timer_.expires_after(std::chrono::milliseconds(static_cast<int64_t>(options_.interval_s * 1000)));
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    if (!controller_->stopped()) (void)SampleNow();
    Arm();
  });
}

void HistorySeries::Labeled(HistorySamples& out, const std::string& prefix,
                            const std::map<std::string, uint32_t>& values) {
  std::set<std::string> now;
  for (const auto& [label, v] : values) {
    if (v == 0) continue;
    std::string name = SeriesName(prefix, label);
    out.emplace_back(name, static_cast<double>(v));
    now.insert(std::move(name));
  }
  // Dropped to zero since the last sample: one 0, so a chart's line comes down.
  const std::string start = prefix + ".";
  for (auto it = nonzero_.lower_bound(start); it != nonzero_.end() && it->starts_with(start);) {
    if (!now.contains(*it)) out.emplace_back(*it, 0.0);
    it = nonzero_.erase(it);
  }
  nonzero_.insert(now.begin(), now.end());
}

HistorySamples HistorySeries::Next(const ClusterSnapshot& s) {
  HistorySamples out;
  const auto add = [&out](std::string name, double v) { out.emplace_back(std::move(name), v); };
  add("gpus_total", s.gpus_total);
  add("gpus_allocated", s.gpus_allocated);
  add("gpus_idle", s.gpus_idle);
  add("gpus_drained", s.gpus_drained);
  add("gpus_down", s.gpus_down);
  add("nodes_down", s.nodes_down);
  add("jobs_pending", s.jobs_by_state.at("pending"));
  add("jobs_running", s.jobs_by_state.at("running") + s.jobs_by_state.at("checkpointing"));
  Labeled(out, "queue_jobs", s.queue_by_reason);
  for (const LevelSnapshot& l : s.levels) {
    add("largest_free_block_gpus." + l.level, l.largest_free_block);
    add("fragmentation." + l.level, l.fragmentation);
  }
  add("fgd", s.fgd);
  if (s.placement_efficiency) add("placement_efficiency", *s.placement_efficiency);
  // Per interval: what the core's per-job counters grew by since the last sample.
  uint64_t preemptions = 0;
  double lost_gpu_s = 0;
  if (have_losses_) {
    for (const auto& [id, now] : s.job_losses) {
      auto it = last_losses_.find(id);
      const std::pair<uint32_t, double> before =
          it == last_losses_.end() ? std::pair<uint32_t, double>{0, 0.0} : it->second;
      if (now.first > before.first) preemptions += now.first - before.first;
      if (now.second > before.second) lost_gpu_s += now.second - before.second;
    }
  }
  last_losses_ = s.job_losses;
  have_losses_ = true;
  add("preemptions", static_cast<double>(preemptions));
  add("checkpoint_lost_gpu_hours", lost_gpu_s / 3600);
  Labeled(out, "user_gpus", s.user_gpus);
  Labeled(out, "account_gpus", s.account_gpus);
  return out;
}

HistorySamples HistorySampler::SampleNow() {
  const ClusterSnapshot snap = TakeSnapshot(*controller_, &best_, &first_predicted_);
  HistorySamples series = series_.Next(snap);
  store::Batch b;
  b.RecordSamples(snap.now, series);
  if (options_.retention_s > 0) b.PruneHistory(snap.now - options_.retention_s);
  ++samples_;
  committer_->Enqueue(std::move(b), [](const Result<store::BatchResult>& r) {
    // On the writer thread: only log. A lost sample is a gap in a chart, not a lost job.
    if (!r) PHX_LOG(kWarn) << "history: sample not written: " << r.error().ToString();
  });
  return series;
}

}  // namespace phalanx::service
