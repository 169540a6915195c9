// Partitions: named sets of nodes a job may run on, each with its own limits and state, as
// Slurm's partitions (docs/scheduling.md, "Partitions"). PartitionConfig is what the daemon's
// config (or a scenario) states; PartitionTable is it resolved against a Topology: node names
// to ids, the GPUs outside each partition (which placement fences off), the GPUs inside.
//
// With no partition configured the table holds one, "default", of every node, so a config
// without partitions behaves as before. A job names partitions in order (JobSpec::partitions);
// none means the default partition. It runs in the first one where it can start (or, waiting,
// the first where it can start earliest).
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/ids.h"
#include "core/common/result.h"
#include "core/common/time.h"
#include "util/job_fields.h"

namespace phalanx {

class Topology;

// UP: jobs are accepted and started. DRAIN: jobs already queued still start, new ones are
// refused. DOWN: jobs are accepted and queued, none starts (they wait PartitionDown).
// INACTIVE: refused, and none starts.
enum class PartitionState : uint8_t { kUp, kDown, kDrain, kInactive };
inline bool StartsJobs(PartitionState s) { return s == PartitionState::kUp || s == PartitionState::kDrain; }
std::string_view PartitionStateName(PartitionState state);                 // UP, DOWN, DRAIN, INACTIVE
std::optional<PartitionState> ParsePartitionState(std::string_view text);  // case-insensitive

// A partition's walltime limit of "UNLIMITED": the longest walltime the core plans with.
inline constexpr Duration kUnlimitedWalltime = kMaxJobSeconds;  // util/job_fields.h: 365 days

struct PartitionConfig {
  std::string name;
  std::vector<std::string> nodes;  // node names; empty: every node of the cluster
  PartitionState state = PartitionState::kUp;
  Duration default_walltime = 0;  // 0: SchedulerConfig::default_walltime
  Duration max_walltime = 0;      // 0: SchedulerConfig::max_walltime; kUnlimitedWalltime: UNLIMITED
  uint32_t max_gpus_per_job = 0;  // 0: no limit
  // Slurm's MaxTRESPerUser=gres/gpu=N: the GPUs one user's running jobs may hold in it; a job
  // past it waits UserLimit (it is not refused). 0: no limit.
  uint32_t max_gpus_per_user = 0;
  bool is_default = false;  // the partition of jobs that name none (else the first)
};

struct Partition {
  std::string name;
  PartitionState state = PartitionState::kUp;
  Duration default_walltime = 0;   // resolved: never 0
  Duration max_walltime = 0;       // resolved: never 0
  uint32_t max_gpus_per_job = 0;   // 0: no limit
  uint32_t max_gpus_per_user = 0;  // 0: no limit
  bool all_nodes = false;          // every node of the cluster: nothing to fence off
  std::vector<uint8_t> has_node;   // by NodeId
  std::vector<GpuId> outside;      // GPUs on nodes outside it, sorted
  uint32_t gpus = 0;               // GPUs on its nodes
  uint32_t max_node_gpus = 0;      // GPUs of its largest node
};

class PartitionTable {
 public:
  // At most this many partitions (a job's set of partitions is a 64-bit mask inside a pass).
  static constexpr size_t kMax = 64;

  // Resolves `configs` (empty: one "default" of every node) against `topo`. Fails, naming the
  // partition and the value, on an empty or duplicate name, an unknown node, more than kMax
  // partitions, two marked default, or default_walltime > max_walltime.
  static Result<PartitionTable> Build(const std::vector<PartitionConfig>& configs, const Topology& topo,
                                      Duration default_walltime, Duration max_walltime);

  size_t size() const { return parts_.size(); }
  const Partition& at(uint32_t i) const { return parts_[i]; }
  const std::vector<Partition>& all() const { return parts_; }
  uint32_t default_index() const { return default_; }
  const std::string& default_name() const { return parts_[default_].name; }
  // Index of the partition `name`; nullopt when unknown.
  std::optional<uint32_t> Find(std::string_view name) const;
  // A job's partitions: `names` in order (empty: the default one). Fails on an unknown name or
  // one listed twice ("partition: unknown partition 'x' (known: a, b)").
  Result<std::vector<uint32_t>> Resolve(const std::vector<std::string>& names) const;
  // The first of `ids` whose nodes hold all of `gpus`; the first of `ids` when none does.
  uint32_t Holding(const std::vector<uint32_t>& ids, const std::vector<GpuId>& gpus, const Topology& topo) const;

 private:
  std::vector<Partition> parts_;
  uint32_t default_ = 0;
};

// The bit set of `ids` (each < PartitionTable::kMax).
inline uint64_t PartitionMask(const std::vector<uint32_t>& ids) {
  uint64_t m = 0;
  for (uint32_t i : ids) m |= uint64_t{1} << i;
  return m;
}

}  // namespace phalanx
