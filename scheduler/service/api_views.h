// The API's reads, built from the Controller's state: GetJob, ListJobs, GetTopology, ListNodes,
// GetStats, GetFragmentation, ExplainPending, and the job and node views that mutations answer
// with. Shared by the gRPC services and the HTTP side (the same answers); statuses as clients
// see them (rpc_util.h's mapping).
// Thread-safety: io thread only (they read the Controller).
#pragma once

#include <grpcpp/support/status.h>

#include <string>

#include "phalanx/v1/phalanx.pb.h"
#include "service/caller.h"
#include "service/controller.h"

namespace phalanx::service::views {

// The API view of a job as `viewer` may see it (proto_convert.h's FillJob with its launch
// info, then the Controller's private_data rules, caller.h): the owner and admins see every
// field (the environment only with `include_env`); anyone else sees the job with its script,
// arguments, environment, working directory and output paths cleared (and, per private_data,
// its name, user and account), each cleared field named in hidden_fields. Every path that
// shows a job (gRPC reads, Watch, mutations' answers, HTTP) builds it here. False, and `out`
// untouched, when private_data jobs hides the job from `viewer`.
bool FillJob(Controller& c, const JobRecord& job, const Caller& viewer, bool include_env, v1::Job* out);
// Of the job `id`; false and `out` untouched when there is none.
bool FillJob(Controller& c, JobId id, const Caller& viewer, bool include_env, v1::Job* out);
// Clears what someone who is neither the owner nor an admin may not see (JobView::kPublic).
void Redact(const PrivateData& rules, v1::Job* job);
// Of the node `name`; `out` untouched when there is none.
void FillNode(const Controller& c, const std::string& name, v1::Node* out);

// The API view of a job Slurm schedules itself (Job.slurm set, id 0), as `viewer` may see it (the
// same private_data rules as FillJob). False, `out` untouched, when hidden.
bool FillSlurmJob(const Controller& c, const ForeignJob& job, const Caller& viewer, v1::Job* out);
// Slurm mode: Slurm's own jobs `who` may see (none outside Slurm mode); PERMISSION_DENIED as ListJobs.
grpc::Status ListSlurmJobs(Controller& c, const Caller& who, const v1::SlurmJobListRequest& req,
                           v1::ListJobsResponse* out);
// The Phalanx job of a managed Slurm job, else Slurm's own job; NOT_FOUND when neither.
grpc::Status GetSlurmJob(Controller& c, const Caller& who, const v1::SlurmJobRequest& req, v1::Job* out);
// NOT_FOUND (also for another user's job under private_data jobs); PERMISSION_DENIED for the
// environment of another user's job.
grpc::Status GetJob(Controller& c, const Caller& who, const v1::GetJobRequest& req, v1::Job* out);
// The jobs `who` may see. INVALID_ARGUMENT for an unknown state in `states`; PERMISSION_DENIED
// for a `user` filter naming another user under private_data users.
grpc::Status ListJobs(Controller& c, const Caller& who, const v1::ListJobsRequest& req, v1::ListJobsResponse* out);
// PERMISSION_DENIED when `who` may not filter jobs by `user` (another user, private_data users).
grpc::Status CheckUserFilter(const Controller& c, const Caller& who, const std::string& user);
grpc::Status GetTopology(const Controller& c, v1::GetTopologyResponse* out);
grpc::Status ListNodes(const Controller& c, v1::ListNodesResponse* out);
grpc::Status ListPartitions(const Controller& c, v1::PartitionListResponse* out);
grpc::Status GetStats(Controller& c, v1::GetStatsResponse* out);
grpc::Status GetFragmentation(const Controller& c, v1::GetFragmentationResponse* out);
// NOT_FOUND (also for a job private_data jobs hides from `who`); FAILED_PRECONDITION when the
// job is not pending.
grpc::Status ExplainPending(const Controller& c, const Caller& who, const v1::ExplainPendingRequest& req,
                            v1::ExplainPendingResponse* out);

}  // namespace phalanx::service::views
