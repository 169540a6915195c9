#include "service/jobs_service.h"

#include "service/rpc_util.h"

namespace phalanx::service {
namespace {

// Watch: events go through an OutStream so that the io thread can send from anywhere in the
// stream's life; the reactor deletes itself when gRPC is done with it.
class WatchReactor final : public grpc::ServerWriteReactor<v1::JobEvent> {
 public:
  WatchReactor(boost::asio::io_context& io, Controller* controller, Caller who, v1::WatchRequest req)
      : link_(std::make_shared<WatchLink>(
            WatchLink::Ops{[this](const v1::JobEvent* m) { StartWrite(m); }, [this](grpc::Status s) { Finish(std::move(s)); }},
            100000)) {
    boost::asio::post(io, [controller, who = std::move(who), req = std::move(req), link = link_] {
      controller->Watch(who, req, link);
    });
  }
  void OnWriteDone(bool ok) override { link_->OnWriteDone(ok); }
  void OnCancel() override { link_->Close(grpc::Status::CANCELLED); }
  void OnDone() override {
    link_->Detach();
    delete this;
  }

 private:
  std::shared_ptr<WatchLink> link_;
};

class RejectedWatch final : public grpc::ServerWriteReactor<v1::JobEvent> {
 public:
  explicit RejectedWatch(grpc::Status status) { Finish(std::move(status)); }
  void OnDone() override { delete this; }
};

}  // namespace

#define PHX_CALLER(ctx)                                                      \
  Caller who;                                                                \
  if (auto st = identity_->User(*(ctx), &who); !st.ok()) return FinishNow(ctx, st)

grpc::ServerUnaryReactor* JobsService::Submit(grpc::CallbackServerContext* ctx, const v1::SubmitRequest* req, v1::SubmitResponse* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, who, req, resp](grpc::ServerUnaryReactor* r) {
    controller_->Submit(who, req->spec(), [r, resp](grpc::Status st, JobId id) {
      resp->set_job_id(id);
      r->Finish(st);
    });
  });
}

grpc::ServerUnaryReactor* JobsService::Cancel(grpc::CallbackServerContext* ctx, const v1::CancelRequest* req, v1::CancelResponse* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, who, req, resp](grpc::ServerUnaryReactor* r) {
    controller_->Cancel(who, req->job_id(), req->signal(), [r, resp](grpc::Status st, v1::JobState s) {
      resp->set_state(s);
      r->Finish(st);
    });
  });
}

grpc::ServerUnaryReactor* JobsService::Get(grpc::CallbackServerContext* ctx, const v1::GetJobRequest* req, v1::Job* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, who, req, resp](grpc::ServerUnaryReactor* r) { r->Finish(controller_->GetJob(who, *req, resp)); });
}

grpc::ServerUnaryReactor* JobsService::List(grpc::CallbackServerContext* ctx, const v1::ListJobsRequest* req, v1::ListJobsResponse* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, who, req, resp](grpc::ServerUnaryReactor* r) { r->Finish(controller_->ListJobs(who, *req, resp)); });
}

grpc::ServerWriteReactor<v1::JobEvent>* JobsService::Watch(grpc::CallbackServerContext* ctx, const v1::WatchRequest* req) {
  Caller who;
  if (auto st = identity_->User(*ctx, &who); !st.ok()) return new RejectedWatch(st);
  return new WatchReactor(io_, controller_, who, *req);
}

grpc::ServerUnaryReactor* JobsService::Hold(grpc::CallbackServerContext* ctx, const v1::JobRef* req, v1::Job* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, who, req, resp](grpc::ServerUnaryReactor* r) {
    controller_->Hold(who, req->job_id(), [r, resp](grpc::Status st, v1::Job j) {
      *resp = std::move(j);
      r->Finish(st);
    });
  });
}

grpc::ServerUnaryReactor* JobsService::Release(grpc::CallbackServerContext* ctx, const v1::JobRef* req, v1::Job* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, who, req, resp](grpc::ServerUnaryReactor* r) {
    controller_->Release(who, req->job_id(), [r, resp](grpc::Status st, v1::Job j) {
      *resp = std::move(j);
      r->Finish(st);
    });
  });
}

grpc::ServerUnaryReactor* JobsService::Update(grpc::CallbackServerContext* ctx, const v1::UpdateJobRequest* req, v1::Job* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, who, req, resp](grpc::ServerUnaryReactor* r) {
    controller_->Update(who, *req, [r, resp](grpc::Status st, v1::Job j) {
      *resp = std::move(j);
      r->Finish(st);
    });
  });
}

grpc::ServerUnaryReactor* JobsService::ReportCheckpoint(grpc::CallbackServerContext* ctx, const v1::ReportCheckpointRequest* req,
                                                        v1::Job* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, who, req, resp](grpc::ServerUnaryReactor* r) {
    controller_->ReportCheckpoint(who, *req, [r, resp](grpc::Status st, v1::Job j) {
      *resp = std::move(j);
      r->Finish(st);
    });
  });
}

}  // namespace phalanx::service
