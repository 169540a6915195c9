// SchedulerConfig: every knob of the scheduling core, with defaults, and the named policy
// presets used by the simulator's baselines ("fifo-firstfit", "slurm-like", "phalanx").
// Thread-safety: plain values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "core/common/time.h"
#include "core/placement/bandwidth_model.h"
#include "core/queue/fairshare.h"
#include "core/queue/limits.h"
#include "core/queue/priority.h"

namespace phalanx {

enum class BackfillMode : uint8_t {
  kNone,          // strict order: nothing passes a blocked job
  kEasy,          // reserve for the first blocked job only
  kConservative,  // reserve for the first `reserve_depth` blocked jobs
};

enum class QueueOrder : uint8_t {
  kPriority,  // multifactor priority (class, age, fairshare, size)
  kFifo,      // submit time only
};

// How placement treats the topology.
enum class PlacementMode : uint8_t {
  kTopology,   // the Placer: bandwidth-optimal block, best fit, rails
  kNodeBestFit,// Slurm cons_tres + topology/tree: fewest leaves, whole nodes first, no bandwidth model
  kFirstFit,   // the first free GPUs in id order, no topology
};

struct SchedulerConfig {
  std::string name = "phalanx";
  QueueOrder order = QueueOrder::kPriority;
  PlacementMode placement = PlacementMode::kTopology;
  bool best_fit = true;                // placer tie-breaking (false: worst fit, for measurements)
  BackfillMode backfill = BackfillMode::kConservative;
  uint32_t reserve_depth = 100;        // conservative: reserve for this many jobs; 0 = all
  bool whole_node_reservations = false;// slurm-like: a reservation is whole nodes, not a block
  Duration default_walltime = 3600;
  Duration max_walltime = 7 * 24 * 3600;

  // Class tiers are strict by default: one class step (30000 / 3 with four classes) outweighs
  // age + fairshare + size together (7000), so fairshare orders jobs within a class.
  PriorityWeights weights = {.priority_class = 30000, .age = 1000, .fairshare = 5000, .job_size = 1000};
  PriorityClassConfig classes = DefaultPriorityClasses();
  FairshareConfig fairshare;
  LimitsConfig limits;

  bool preemption = true;
  Duration checkpoint_grace = 300;     // deadline after the checkpoint signal
  Duration periodic_checkpoint = 0;    // default checkpoint interval for jobs (0: none)
  bool elastic = true;                 // start elastic jobs at the largest legal size, shrink, grow
  Duration grow_after_idle = 300;      // GPUs idle this long may grow elastic jobs

  ModelParams model;
};

// "phalanx" (everything on), "slurm-like" (EASY backfill, whole-node reservations, node-level
// best fit, no preemption/elastic), "fifo-firstfit" (FIFO, first free GPUs, no backfill).
Result<SchedulerConfig> PolicyPreset(std::string_view name);
std::vector<std::string_view> PolicyPresetNames();

}  // namespace phalanx
