#include "core/sched/config.h"

namespace phalanx {

std::vector<std::string_view> PolicyPresetNames() { return {"phalanx", "slurm-like", "fifo-firstfit"}; }

Result<SchedulerConfig> PolicyPreset(std::string_view name) {
  SchedulerConfig c;
  c.name = std::string(name);
  if (name == "phalanx") return c;
  if (name == "slurm-like") {
    c.placement = PlacementMode::kNodeBestFit;
    c.backfill = BackfillMode::kEasy;
    c.whole_node_reservations = true;
    c.preemption = false;
    c.elastic = false;
    return c;
  }
  if (name == "fifo-firstfit") {
    c.order = QueueOrder::kFifo;
    c.placement = PlacementMode::kFirstFit;
    c.backfill = BackfillMode::kNone;
    c.preemption = false;
    c.elastic = false;
    return c;
  }
  return Fail("policy", "unknown policy '" + std::string(name) + "' (known: phalanx, slurm-like, fifo-firstfit)");
}

}  // namespace phalanx
