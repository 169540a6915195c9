// The one validation of a submitted phalanx.v1.JobSpec, run by gsub before it sends and by
// phalanxd on every Submit (so a raw gRPC client is held to everything gsub checks). It walks
// the spec's fields through util/job_fields.h's rules; an error's `where` is the field
// ("spec.name", "spec.env[PATH]", "spec.command[2]") and its message quotes the value escaped.
// What needs the daemon's state (the class table, the cluster, limits, the maximum walltime)
// is the core's to check (Scheduler::ValidateSpec).
// Thread-safety: pure function.
#pragma once

#include "core/common/result.h"
#include "phalanx/v1/phalanx.pb.h"

namespace phalanx {

Status CheckJobSpec(const v1::JobSpec& spec);

}  // namespace phalanx
