// ginfo's output: nodes grouped by state with hostlists (sinfo's habit: CompressHostlist,
// util/hostlist.h), one line per node (sinfo -N), free blocks per topology level, and why a job
// is pending.
//
// Node states as sinfo shows them: an UP node is "idle" (all GPUs free), "mix" (some) or
// "alloc" (none); a DRAIN node is "drng" while jobs still run on it, else "drain"; DOWN is
// "down". A trailing "*" marks a node whose agent is not connected (sinfo: not responding).
// Thread-safety: pure functions (times use the process's time zone, TZ).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "phalanx/v1/phalanx.pb.h"

namespace phalanx::cli {

std::string NodeStateText(const v1::Node& node);

// STATE NODES GPUS FREE NODELIST, one line per state.
std::string FormatNodeSummary(const v1::ListNodesResponse& nodes);
// NODE STATE GPUS FREE MODEL LEAF JOBS REASON, one line per node (JOBS: Phalanx job ids, then
// Slurm mode's own Slurm jobs as slurm:ID; their GPUs are not in FREE).
std::string FormatNodeLines(const v1::ListNodesResponse& nodes);
// LEVEL DOMAINS WHOLE_FREE LARGEST_FREE DOMAIN_GPUS, one line per level, then the FGD figure.
std::string FormatFragmentation(const v1::GetFragmentationResponse& fragmentation);
// ginfo --why: the reason, detail, queue position, predicted start, reserved block.
std::string FormatExplain(uint64_t job_id, const v1::ExplainPendingResponse& why, int64_t now);

}  // namespace phalanx::cli
