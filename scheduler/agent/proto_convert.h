// The one place where the agent's plain types meet the generated protobuf types of
// phalanx/v1/phalanx.proto (Agents service). Nothing else in the agent's core sees protobuf.
// Thread-safety: pure functions.
#pragma once

#include <vector>

#include "agent/gpu_info.h"
#include "agent/launch_spec.h"
#include "agent/part_supervisor.h"
#include "core/common/result.h"
#include "phalanx/v1/phalanx.pb.h"

namespace phalanx::agent {

// LaunchCommand -> LaunchSpec. walltime: the command's walltime_s (the effective one), else
// spec.walltime_s. Fails naming the field: job_id or launch_id 0, master_port > 65535.
Result<LaunchSpec> LaunchSpecFromProto(const v1::LaunchCommand& cmd);

v1::GpuInfo GpuToProto(const GpuDevice& gpu);
v1::RunningPart RunningToProto(const PartInfo& part);
v1::PartExited PartEndToProto(const PartEnd& end);
v1::CheckpointReport CheckpointToProto(const CheckpointSeen& seen);

}  // namespace phalanx::agent
