// Slurm's TRES and GRES strings, parsed without Slurm: the GPU count in a job's tres_per_node /
// tres_per_job ("gres:gpu:8" in 22.05, "gres/gpu:8" from 23.02, "gres/gpu:a100=8" in some
// outputs, several entries joined by ',' or ';') and in a node's gres ("gpu:8",
// "gpu:h100:8(S:0-1)").
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

namespace phalanx::slurm {

// The GPUs named in a TRES list; 0 when none. Unparsable counts count as 0.
uint32_t GpusInTres(std::string_view tres);
// The GPUs in a node's Gres= ("gpu:8", "gpu:h100:4(S:0),gpu:a100:4"); 0 when none.
uint32_t GpusInGres(std::string_view gres);

}  // namespace phalanx::slurm
