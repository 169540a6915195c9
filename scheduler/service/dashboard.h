// Dashboard: what phalanxd's web page (scheduler/web/, served at /) reads beyond the API's
// JSON views (docs/dashboard.md):
//  - /api/v1/map: the cluster map -- the topology's domains (spine > leaf > nvl > node) in
//    depth-first order, every GPU's owner, each node's state, and per running job its
//    predicted bus bandwidth next to the best the cluster could give a job of its size;
//  - /api/v1/placeable: per level, free blocks by size, and for common job sizes whether a
//    job of N GPUs within one domain of the level could start now (the core's Placer's
//    answer: placed, busy or unsatisfiable with its reason) and when it would start if
//    submitted now (the core's Scheduler::WhatIfStarts: now, a time, or never);
//  - /api/v1/jobs/{id}/events: a job's events (submit, start, checkpoint, preempt, resize,
//    end, ...): from the store's job history when there is one (set_store: it survives a
//    restart), else those seen since phalanxd started;
//  - /api/v1/samples: utilization samples (allocated, unavailable, pending, running, FGD,
//    largest free block) taken after passes, at most one per sample_interval, since start;
//  - /api/v1/events: Server-Sent Events, one "job" event per Controller event (the API's
//    JobEvent as JSON), a "sample" event with each sample, and a "nodes" event after a pass
//    that saw node states change (drain, resume, an agent lost or back).
// The JSON is written by hand (compact arrays: a 32,768-GPU map is one owner array).
// Thread-safety: io thread only, as the Controller.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/common/result.h"
#include "service/caller.h"
#include "service/controller.h"
#include "service/http/router.h"

namespace phalanx::store {
class Store;
}

namespace phalanx::service {

struct DashboardOptions {
  double sample_interval_s = 5;
  size_t max_samples = 17280;   // a day at 5 s
  size_t max_jobs_kept = 4096;  // jobs whose events are kept (the oldest ids go first)
  size_t max_events_per_job = 256;
};

class Dashboard {
 public:
  Dashboard(Controller* controller, DashboardOptions options = {});
  ~Dashboard();
  Dashboard(const Dashboard&) = delete;
  Dashboard& operator=(const Dashboard&) = delete;

  // Who a request reads as (HttpEndpoints::Viewer: the admin token, else anonymous); job
  // events and job pages are shown as that reader may see them (private_data).
  using ViewerOf = std::function<Caller(const http::Request&)>;
  // Adds /, /static/{name} and the endpoints above to `router`; failures appended to `added`.
  // Call after every other route is added: /api/v1/samples says whether /api/v1/history is
  // one of them.
  void AddRoutes(http::Router& router, const ViewerOf& viewer, std::vector<Status>* added);
  // Starts watching the Controller (job events into the history). Call once, after Start.
  void Watch();
  // Job events are read from `reader`'s job history (Store::ReadJobEvents; a connection used
  // on the io thread only) instead of the in-memory history. nullptr: in memory.
  void set_store(store::Store* reader) { store_ = reader; }
  // After each scheduling pass (the Controller's observer): a "nodes" event when node states
  // changed since the last pass; a sample when one is due.
  void AfterPass();

  // The JSON bodies (also for tests).
  std::string MapJson() const;
  std::string PlaceableJson() const;
  std::string SamplesJson(int64_t since) const;
  // Empty when the job is unknown to both the core and the history.
  std::string JobEventsJson(JobId id) const;

  struct Event {
    Time time = 0;
    std::string kind;
    std::string detail;
  };
  struct Sample {
    Time time = 0;
    uint32_t allocated = 0, unavailable = 0, total = 0, pending = 0, running = 0, largest_free = 0;
    double fgd = 0;
  };
  void Record(Time time, std::string_view kind, const JobRecord& job);

 private:
  class HistorySink;
  Sample TakeSample() const;
  // The predicted busbw of the core's Placer's pick for `gpus` GPUs on the empty cluster
  // (every job gone, every node up); cached per size (the structure never changes).
  double BestBusbw(uint32_t gpus) const;
  void Broadcast(std::string_view event, const std::string& data);

  Controller* const controller_;
  const DashboardOptions options_;
  store::Store* store_ = nullptr;
  std::map<JobId, std::vector<Event>> history_;
  std::deque<Sample> samples_;
  std::chrono::steady_clock::time_point next_sample_{};
  std::vector<std::shared_ptr<http::EventStream>> streams_;  // for "sample" and "nodes" events
  std::vector<uint8_t> node_states_;                         // as of the last pass
  std::shared_ptr<HistorySink> sink_;
  bool has_history_ = false;
  mutable std::unique_ptr<Topology> empty_;
  mutable std::map<uint32_t, double> best_busbw_;
  // PlaceableJson's answers per shape (JSON, per level), the core's (passes, now) they were
  // made at, its time, their cost, and when they may be made again (paced by their cost).
  mutable std::vector<std::string> shape_json_;
  mutable std::pair<uint64_t, Time> placeable_version_{};
  mutable bool placeable_stale_ = true;  // a job event or a pass since
  mutable Time answers_at_ = 0;
  mutable double answers_ms_ = 0;
  mutable std::chrono::steady_clock::time_point next_answers_{};
};

}  // namespace phalanx::service
