// HistorySampler: every `interval_s` seconds (history.interval, default 60) phalanxd takes a
// ClusterSnapshot and writes one row per series into the store's history (schema v3) through
// the group committer -- the same path and transaction groups as every other write, one small
// batch per sample -- and prunes rows older than `retention_s` (history.retention, default 30
// days) in the same batch. The series and their names are in docs/monitoring.md; GET
// /api/v1/history reads them back.
//
// Per-interval series (preemptions, checkpoint_lost_gpu_hours) are differences between two
// samples of the core's per-job counters; the first sample after a start records 0 (what a
// restart recovered is not counted again). Labeled series (queue_jobs.REASON, user_gpus.USER,
// account_gpus.ACCOUNT) are written while non-zero and once more at 0 when they drop to 0.
//
// Thread-safety: everything on the io thread (it reads the Controller), except the
// constructor and destructor (before the io thread runs / after it stopped). Stop before
// destroying.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "adapters/store/group_committer.h"
#include "service/cluster_snapshot.h"
#include "service/controller.h"

namespace phalanx::service {

struct HistoryOptions {
  double interval_s = 60;             // > 0
  Duration retention_s = 30 * 86400;  // rows older than now - retention are deleted; 0: keep all
};

using HistorySamples = std::vector<std::pair<std::string, double>>;

// The series of successive snapshots (pure: no I/O). Keeps what per-interval and
// drop-to-zero series need from the previous snapshot.
class HistorySeries {
 public:
  HistorySamples Next(const ClusterSnapshot& s);

 private:
  void Labeled(HistorySamples& out, const std::string& prefix, const std::map<std::string, uint32_t>& values);

  std::map<JobId, std::pair<uint32_t, double>> last_losses_;
  bool have_losses_ = false;
  std::set<std::string> nonzero_;  // labeled series written non-zero last time
};

class HistorySampler {
 public:
  HistorySampler(boost::asio::io_context& io, Controller* controller, store::GroupCommitter* committer,
                 HistoryOptions options);
  void Start();  // first sample one interval from now
  void Stop();
  // Takes one sample now and queues its batch; returns what it wrote.
  HistorySamples SampleNow();
  uint64_t samples() const { return samples_; }

 private:
  void Arm();

  Controller* const controller_;
  store::GroupCommitter* const committer_;
  const HistoryOptions options_;
  boost::asio::steady_timer timer_;
  BestBusbw best_;
  std::map<JobId, Time> first_predicted_;
  HistorySeries series_;
  bool stopped_ = false;
  uint64_t samples_ = 0;
};

// A label value as part of a series name: ',' and '*' (the API's separators) become '_', an
// empty value "-", and the name is cut at 200 bytes.
std::string SeriesName(const std::string& prefix, const std::string& label);

}  // namespace phalanx::service
