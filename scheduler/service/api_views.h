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

// The API view of a job (proto_convert.h's FillJob with its launch info).
void FillJob(Controller& c, const JobRecord& job, bool include_env, v1::Job* out);
// Of the job `id`; `out` untouched when there is none.
void FillJob(Controller& c, JobId id, bool include_env, v1::Job* out);
// Of the node `name`; `out` untouched when there is none.
void FillNode(const Controller& c, const std::string& name, v1::Node* out);

// NOT_FOUND; PERMISSION_DENIED for the environment of another user's job.
grpc::Status GetJob(Controller& c, const Caller& who, const v1::GetJobRequest& req, v1::Job* out);
// INVALID_ARGUMENT for an unknown state in `states`.
grpc::Status ListJobs(Controller& c, const v1::ListJobsRequest& req, v1::ListJobsResponse* out);
grpc::Status GetTopology(const Controller& c, v1::GetTopologyResponse* out);
grpc::Status ListNodes(const Controller& c, v1::ListNodesResponse* out);
grpc::Status GetStats(Controller& c, v1::GetStatsResponse* out);
grpc::Status GetFragmentation(const Controller& c, v1::GetFragmentationResponse* out);
// NOT_FOUND; FAILED_PRECONDITION when the job is not pending.
grpc::Status ExplainPending(const Controller& c, const v1::ExplainPendingRequest& req, v1::ExplainPendingResponse* out);

}  // namespace phalanx::service::views
