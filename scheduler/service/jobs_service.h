// JobsService: the phalanx.v1.Jobs gRPC service (callback API). Each call establishes the
// caller (Identity), then posts its work to the io thread: the request becomes core types
// (proto_convert.h), the Controller answers, the answer becomes the API's (api_views.h; errors
// through rpc_util.h's mapping) and the reactor is finished. Watch is a ServerWriteReactor fed
// through an OutStream.
// Thread-safety: gRPC calls the handlers on its threads; they only touch the Controller from
// the io thread.
#pragma once

#include <boost/asio/io_context.hpp>

#include "phalanx/v1/phalanx.grpc.pb.h"
#include "service/controller.h"
#include "service/identity.h"

namespace phalanx::service {

class JobsService final : public v1::Jobs::CallbackService {
 public:
  JobsService(boost::asio::io_context& io, Controller* controller, const Identity* identity)
      : io_(io), controller_(controller), identity_(identity) {}

  grpc::ServerUnaryReactor* Submit(grpc::CallbackServerContext* ctx, const v1::SubmitRequest* req,
                                   v1::SubmitResponse* resp) override;
  grpc::ServerUnaryReactor* Cancel(grpc::CallbackServerContext* ctx, const v1::CancelRequest* req,
                                   v1::CancelResponse* resp) override;
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* ctx, const v1::GetJobRequest* req, v1::Job* resp) override;
  grpc::ServerUnaryReactor* List(grpc::CallbackServerContext* ctx, const v1::ListJobsRequest* req,
                                 v1::ListJobsResponse* resp) override;
  grpc::ServerWriteReactor<v1::JobEvent>* Watch(grpc::CallbackServerContext* ctx, const v1::WatchRequest* req) override;
  grpc::ServerUnaryReactor* Hold(grpc::CallbackServerContext* ctx, const v1::JobRef* req, v1::Job* resp) override;
  grpc::ServerUnaryReactor* Release(grpc::CallbackServerContext* ctx, const v1::JobRef* req, v1::Job* resp) override;
  grpc::ServerUnaryReactor* Update(grpc::CallbackServerContext* ctx, const v1::UpdateJobRequest* req,
                                   v1::Job* resp) override;
  grpc::ServerUnaryReactor* Requeue(grpc::CallbackServerContext* ctx, const v1::JobRef* req, v1::Job* resp) override;
  grpc::ServerUnaryReactor* ReportCheckpoint(grpc::CallbackServerContext* ctx, const v1::ReportCheckpointRequest* req,
                                             v1::Job* resp) override;
  grpc::ServerUnaryReactor* ListSlurmJobs(grpc::CallbackServerContext* ctx, const v1::SlurmJobListRequest* req,
                                          v1::ListJobsResponse* resp) override;
  grpc::ServerUnaryReactor* GetSlurmJob(grpc::CallbackServerContext* ctx, const v1::SlurmJobRequest* req,
                                        v1::Job* resp) override;

 private:
  boost::asio::io_context& io_;
  Controller* const controller_;
  const Identity* const identity_;
};

}  // namespace phalanx::service
