// Codec: the deterministic text forms the store keeps in its TEXT columns.
//
//   JobSpec   "v=1 name=train%20x user=alice account=ml class= gpus=16 nodes=2 gpn=8 level=node
//             fit=require excl=0 rail=1 min=0 step=any:0 wall=3600 preempt=- ckpt=0 restart=120
//             held=0 after=3,5 submit=100 grace=60"
//             Every field, always in this order (one spec has exactly one encoding), except
//             the optional ones after `submit`, in this order, each written only when set, so
//             rows written before it existed decode without it (and re-encode unchanged):
//             `grace` (the per-job checkpoint grace, not 0), `dep` (the dependencies as
//             Slurm's text, util/dependency.h, escaped: "dep=afterok:3,singleton",
//             "dep=afterok:3%3Fafterany:4"), `array`
//             (an array task: "array=ARRAY:TASK:MAX_RUNNING"); strings
//             percent-escaped (anything but [A-Za-z0-9._~:/@+,-]); the job id is not part of it
//             (it is the row's key). `preempt` is "-" (unset), "0" or "1".
//   GPU list  "0-7,16,18-19": global GPU indices, ascending runs (the input order is kept:
//             a run is only formed from consecutive ascending indices).
//   Job ids   "3,5,9".
//   Decision  the event-log payload of a decision: "gpus=0-7 deadline=130 requeue=1 reason=..."
//             (only the fields its kind uses).
// A GPU list decodes to at most kMaxTopologyGpus (core/topology/limits.h) GPUs in all.
// Decoders are strict: an unknown, missing, repeated or malformed field is an Error whose
// `where` names the field; they never crash on any input (fuzzed in store_test).
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/ids.h"
#include "core/common/result.h"
#include "core/sched/decision.h"
#include "core/sched/job.h"
#include "core/topology/topology.h"

namespace phalanx::store {

std::string EncodeJobSpec(const JobSpec& spec);
// The spec with id = kNoJob (the caller sets it from the row).
Result<JobSpec> DecodeJobSpec(std::string_view text);

std::string EncodeGpus(const std::vector<GpuId>& gpus);
Result<std::vector<GpuId>> DecodeGpus(std::string_view text);

std::string EncodeJobIds(const std::vector<JobId>& ids);
Result<std::vector<JobId>> DecodeJobIds(std::string_view text);

std::string EncodeDecisionPayload(const Decision& d);

// Percent-escaping used for every string field (also usable in event payloads).
std::string Escape(std::string_view s);
Result<std::string> Unescape(std::string_view s);

// Names of the enums the store writes, and their inverses (nullopt for anything else).
std::optional<JobState> ParseJobState(std::string_view name);
std::optional<NodeState> ParseNodeState(std::string_view name);
std::string_view FitModeName(FitMode fit);
std::optional<FitMode> ParseFitMode(std::string_view name);
std::string_view ElasticStepName(ElasticStep step);
std::optional<ElasticStep> ParseElasticStep(std::string_view name);
std::string_view AfterCheckpointName(JobRecord::After after);
std::optional<JobRecord::After> ParseAfterCheckpoint(std::string_view name);

}  // namespace phalanx::store
