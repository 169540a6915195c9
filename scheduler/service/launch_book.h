// LaunchBook: the jobs' launch info -- what the store keeps to run a job (the submitted
// phalanx.v1.Job: spec, user, uid, gid) and, once it ended, how it ended (exit code, reason,
// last placement). The Controller passes it around without looking inside; proto_convert.h
// builds and reads it. Unfinished jobs' launch info is kept in memory; finished jobs' is read
// back from the store on demand, through a cache of kFinalCache jobs (lowest ids evicted first).
// Thread-safety: none (the io thread's); `reader` is its own store connection.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "adapters/store/store.h"
#include "core/sched/job.h"
#include "core/topology/topology.h"
#include "phalanx/v1/phalanx.pb.h"

namespace phalanx::service {

using LaunchInfo = v1::Job;

class LaunchBook {
 public:
  // `unfinished`: the unfinished jobs' launch info (recovery); `reader` may be null (no store
  // to read finished jobs' from).
  LaunchBook(std::map<JobId, LaunchInfo> unfinished, store::Store* reader);

  // The launch info as the store keeps it (Batch::SetLaunchInfo).
  static std::string Encode(const LaunchInfo& info);

  // A submission, once its batch committed.
  void Add(JobId job, LaunchInfo info);
  // An unfinished job's launch info; null when there is none.
  const LaunchInfo* FindUnfinished(JobId job) const;
  // Any job's; null when there is none (or it cannot be read: logged). Valid until the next call.
  const LaunchInfo* Find(const JobRecord& job);
  // The signal the job asked to be checkpointed with; 0: none given.
  int32_t CheckpointSignal(JobId job) const;

  // How an unfinished job is ending, noted just before the batch that saves its final state.
  void SetOutcome(JobId job, int32_t exit_code, const std::string& reason);
  // The job became final: its launch info with the outcome and its last placement (`last_gpus`
  // when the core has cleared the job's GPUs) goes into `b`, and into the finished jobs' cache.
  void SaveOutcome(store::Batch& b, const std::vector<GpuId>& last_gpus, const JobRecord& job, const Topology& topo);
  // The job is final: nothing more is kept for it as an unfinished job.
  void Forget(JobId job) { unfinished_.erase(job); }

  static constexpr size_t kFinalCache = 4096;

 private:
  store::Store* const reader_;
  std::map<JobId, LaunchInfo> unfinished_;
  std::map<JobId, LaunchInfo> final_;
};

}  // namespace phalanx::service
