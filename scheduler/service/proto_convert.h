// Where API (protobuf) types meet core and service types: phalanx.v1 messages <-> JobSpec,
// JobRecord, JobState, NodeState, job updates, decisions' GPU sets, and the agent protocol
// (reports in as agent_messages.h's structs, commands out). The gRPC services call these; the
// Controller speaks core types only, and the agent classes only queue and send the commands
// built here (api_views.h builds the API's read answers).
//
// Request conversion validates every field it maps and fails with an Error whose `where` is
// the field ("spec.gpus") and whose message quotes the value; the core validates the rest
// (Scheduler::ValidateSpec). The launch info the store keeps for each job is a serialized
// v1::Job holding the submitted spec and the submitter's identity.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <optional>

#include "core/common/result.h"
#include "core/sched/job.h"
#include "core/sched/scheduler.h"
#include "core/topology/topology.h"
#include "phalanx/v1/phalanx.pb.h"
#include "service/agent_messages.h"
#include "service/caller.h"
#include "service/launch_plan.h"

namespace phalanx::service {

// The core's spec for a submission by `who` (id and submit time left for the caller to set).
// How to run it: `command` alone (the argv), or `script` with `command` as the script's
// arguments (possibly none). Every field is first held to CheckJobSpec (proto/job_spec_check.h,
// the checks gsub runs too): names without control characters, paths, arguments and env values
// without NUL, bounded sizes, consistent elastic sizes.
Result<JobSpec> CoreSpecFromProto(const v1::JobSpec& spec, const Caller& who);

// What the store keeps to run the job later (launch blob): spec + user/uid/gid.
v1::Job MakeLaunchInfo(const v1::JobSpec& spec, const Caller& who);
std::string EncodeLaunchInfo(const v1::Job& info);
Result<v1::Job> DecodeLaunchInfo(std::string_view blob, JobId job);

// The fields an UpdateJobRequest sets (the core checks their values).
Scheduler::JobUpdate JobUpdateFromProto(const v1::UpdateJobRequest& req);

v1::JobState ToProto(JobState state);
// A job's state as the API shows it: SUSPENDED for a running job an admin suspended (the core
// keeps it running, with spec.suspended), else ToProto(job.state).
v1::JobState ApiState(const JobRecord& job);
v1::NodeState ToProto(NodeState state);

// What the daemon knows about a job besides the core's record.
struct JobExtras {
  // Launch info; null when unknown. For a final job it also holds the outcome: exit_code,
  // reason (how it ended) and the last placement (gpus, nodelist; SetLastPlacement).
  const v1::Job* launch = nullptr;
  // The partitions, for Job.partition (the one it runs in, else the first it names); null: empty.
  const PartitionTable* partitions = nullptr;
};

// The API view of a job. The environment is included only when `include_env`. A final job's
// exit code, reason, GPUs and nodelist come from its launch info (the core has cleared its
// GPUs); without one its reason is its state's name.
void FillJob(const JobRecord& job, const JobExtras& extras, const Topology& topo, bool include_env, v1::Job* out);
// Records where a job that ended last ran in its launch info: `gpus` as GpuRefs and a hostlist.
void SetLastPlacement(const std::vector<GpuId>& gpus, const Topology& topo, v1::Job* info);
void FillGpuRefs(const std::vector<GpuId>& gpus, const Topology& topo,
                 google::protobuf::RepeatedPtrField<v1::GpuRef>* out);
// Slurm hostlist of the nodes holding `gpus`, in node order.
std::string NodelistOf(const std::vector<GpuId>& gpus, const Topology& topo);

// ---- the agent protocol ----------------------------------------------------------------
AgentHello AgentHelloFromProto(const v1::RegisterRequest& req);
AgentMessage AgentMessageFromProto(const v1::AgentReport& report);
// With stores_exits set: this daemon answers every PartExited with ExitStored.
v1::RegisterResponse ToProto(const AgentWelcome& welcome);

// The agent's command for one part of a start; `cluster_name` (the topology's) becomes
// SLURM_CLUSTER_NAME.
v1::LaunchCommand MakeLaunchCommand(const LaunchPart& part, const JobRecord& job, const v1::Job& launch,
                                    const std::string& cluster_name = {});
// The first command on a stream.
v1::DaemonCommand MakeWelcomeCommand(const AgentWelcome& welcome);
v1::DaemonCommand MakeHeartbeatAckCommand(int64_t time);
// `signal` to the job's parts of `launch_id` (0: all of them); with a deadline, the checkpoint
// signal.
v1::DaemonCommand MakeSignalCommand(JobId job, uint64_t launch_id, int32_t signal,
                                    std::optional<Time> checkpoint_deadline);
// Stop the job's parts of `launch_id` (0: all of them): SIGTERM, SIGKILL after `grace_s`.
v1::DaemonCommand MakeSuspendCommand(JobId job, uint64_t launch_id, bool resume);
v1::DaemonCommand MakeKillCommand(JobId job, uint64_t launch_id, int64_t grace_s, const std::string& reason);
// The part's PartExited is stored (or not needed): the agent may forget the part.
v1::DaemonCommand MakeExitStoredCommand(const PartRef& part);

}  // namespace phalanx::service
