// StepReport: one report from a Slurm compute node (docs/slurm.md, "Step reports"), as the
// SPANK plugin (step start and end) and phalanx-ckpt-done (checkpoint done) write it into the
// payload of a MUNGE credential. The payload is text, one `key=value` per line after a first
// line naming the format:
//   phalanx-step-report/1
//   kind=start|end|checkpoint
//   job=<Slurm job id>
//   step=batch|extern|interactive|<step id>    (optional)
//   node=<node name>                           (optional)
//   epoch=<checkpoint epoch>                   (checkpoint only; optional, 0: the next one)
//   path=<checkpoint path>                     (checkpoint only; optional)
// plugins/spank/report.h's phx_report_format writes exactly this.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/common/result.h"

namespace phalanx::service {

inline constexpr std::string_view kStepReportMagic = "phalanx-step-report/1";

struct StepReport {
  enum class Kind { kStart, kEnd, kCheckpoint };
  Kind kind = Kind::kStart;
  uint32_t slurm_job = 0;  // > 0
  std::string step;        // "" when not given
  std::string node;        // "" when not given
  uint64_t epoch = 0;      // checkpoint: 0 = the one after the last
  std::string path;        // checkpoint: where it lies ("" when not given)
};

std::string_view StepReportKindName(StepReport::Kind k);  // "start", "end", "checkpoint"

// Fails (INVALID_ARGUMENT, where = "report line N", naming the key and value): not this
// format, an unknown or repeated key, a missing kind or job, a bad value (job not in
// 1..2^32-1, a step, node or path with control characters or over 255 / 4096 bytes, epoch or
// path on a report that is not a checkpoint).
Result<StepReport> ParseStepReport(std::string_view payload);

}  // namespace phalanx::service
