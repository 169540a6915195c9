#include "service/jobs_service.h"

#include <memory>
#include <optional>
#include <string>

#include "service/api_views.h"
#include "service/out_stream.h"
#include "service/proto_convert.h"
#include "service/rpc_util.h"
#include "util/log.h"

namespace phalanx::service {
namespace {

using WatchLink = OutStream<v1::JobEvent>;

// A Watch's events as the API's JobEvents, as the watcher may see the jobs (api_views.h),
// through the stream's OutStream. Events of jobs hidden from the watcher are dropped.
class WatchSink final : public JobEventSink {
 public:
  WatchSink(Controller* controller, Caller viewer, std::shared_ptr<WatchLink> link)
      : controller_(controller), viewer_(std::move(viewer)), link_(std::move(link)) {}
  bool Send(Time time, std::string_view kind, const JobRecord& job) override {
    v1::JobEvent ev;
    ev.set_time(time);
    ev.set_kind(std::string(kind));
    if (!views::FillJob(*controller_, job, viewer_, false, ev.mutable_job())) return true;
    return link_->Send(std::move(ev));
  }
  bool closed() const override { return link_->closed(); }
  void Close(const CallError& why) override { link_->Close(ToGrpcStatus(why)); }

 private:
  Controller* const controller_;
  const Caller viewer_;
  const std::shared_ptr<WatchLink> link_;
};

// Watch: events go through an OutStream so that the io thread can send from anywhere in the
// stream's life; the reactor deletes itself when gRPC is done with it.
class WatchReactor final : public grpc::ServerWriteReactor<v1::JobEvent> {
 public:
  WatchReactor(boost::asio::io_context& io, Controller* controller, const Caller& who, const v1::WatchRequest& req)
      : link_(std::make_shared<WatchLink>(WatchLink::Ops{[this](const v1::JobEvent* m) { StartWrite(m); },
                                                         [this](grpc::Status s) { Finish(std::move(s)); }},
                                          100000)) {
    WatchFilter filter{req.job_id(), req.user(), req.send_initial()};
    boost::asio::post(io, [controller, who, filter = std::move(filter), link = link_] {
      if (grpc::Status st = views::CheckUserFilter(*controller, who, filter.user); !st.ok()) return link->Close(st);
      if (const JobRecord* j = controller->core().job(filter.job);
          j != nullptr && ViewOf(controller->private_data(), who, j->spec.user) == JobView::kHidden)
        return link->Close(
            grpc::Status(grpc::StatusCode::NOT_FOUND, "job " + std::to_string(filter.job) + ": no such job"));
      controller->Watch(filter, std::make_shared<WatchSink>(controller, who, link));
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

// A mutation's reply: the job's view (as `who` sees it) when it succeeded, then the reactor finished.
Reply<void> AnswerJob(Controller* c, const Caller& who, JobId id, grpc::ServerUnaryReactor* r, v1::Job* resp) {
  return [c, who, id, r, resp](CallStatus st) {
    if (st) views::FillJob(*c, id, who, false, resp);
    r->Finish(ToGrpcStatus(st));
  };
}

}  // namespace

#define PHX_CALLER(ctx) \
  Caller who;           \
  if (auto st = identity_->User(*(ctx), &who); !st.ok()) return FinishNow(ctx, st)

grpc::ServerUnaryReactor* JobsService::Submit(grpc::CallbackServerContext* ctx, const v1::SubmitRequest* req,
                                              v1::SubmitResponse* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, who, req, resp](grpc::ServerUnaryReactor* r) {
    if (auto s = controller_->Serving(); !s) return r->Finish(ToGrpcStatus(s));
    auto spec = CoreSpecFromProto(req->spec(), who);
    if (!spec) return r->Finish(ToGrpcStatus(spec.error()));
    if (auto st = controller_->Authorize(who, &*spec, req->spec().walltime_max()); !st)
      return r->Finish(ToGrpcStatus(st.error()));
    std::string mail = req->spec().submit_info().mail_type();
    if (mail == "NONE") mail.clear();
    controller_->Submit(std::move(*spec), MakeLaunchInfo(req->spec(), who),
                        [r, resp, mail = std::move(mail)](const CallResult<JobId>& id) {
      if (!id.has_value()) return r->Finish(ToGrpcStatus(id.error()));
      // --mail-type is recorded (in the launch info) but phalanxd sends no mail: say so once.
      if (!mail.empty()) {
        PHX_LOG(kInfo) << "job " << id.value() << ": mail-type " << mail
                       << " recorded; mail is not configured (phalanxd sends no mail)";
      }
      resp->set_job_id(id.value());
      r->Finish(grpc::Status::OK);
    });
  });
}

grpc::ServerUnaryReactor* JobsService::Cancel(grpc::CallbackServerContext* ctx, const v1::CancelRequest* req,
                                              v1::CancelResponse* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, who, req, resp](grpc::ServerUnaryReactor* r) {
    auto answer = [r, resp](CallStatus st, std::optional<JobState> state) {
      resp->set_state(state ? ToProto(*state) : v1::JOB_STATE_UNSPECIFIED);
      r->Finish(ToGrpcStatus(st));
    };
    const Scheduler& core = controller_->core();
    JobId id = req->job_id();
    if (req->has_array_task_id()) {
      // One task (gcancel 1234_7).
      id = core.array_task_job(req->job_id(), req->array_task_id());
      if (id == kNoJob) {
        const std::string what = core.array_tasks(req->job_id()) == nullptr
                                     ? "no such array"
                                     : "the array has no task " + std::to_string(req->array_task_id());
        return r->Finish(
            grpc::Status(grpc::StatusCode::NOT_FOUND, "array " + std::to_string(req->job_id()) + ": " + what));
      }
    } else if (core.array_tasks(id) != nullptr) {
      return controller_->CancelArray(who, id, req->signal(), std::move(answer));
    }
    controller_->Cancel(who, id, req->signal(), std::move(answer));
  });
}

grpc::ServerUnaryReactor* JobsService::Get(grpc::CallbackServerContext* ctx, const v1::GetJobRequest* req,
                                           v1::Job* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, who, req, resp](grpc::ServerUnaryReactor* r) {
    r->Finish(views::GetJob(*controller_, who, *req, resp));
  });
}

grpc::ServerUnaryReactor* JobsService::List(grpc::CallbackServerContext* ctx, const v1::ListJobsRequest* req,
                                            v1::ListJobsResponse* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, who, req, resp](grpc::ServerUnaryReactor* r) {
    r->Finish(views::ListJobs(*controller_, who, *req, resp));
  });
}

grpc::ServerWriteReactor<v1::JobEvent>* JobsService::Watch(grpc::CallbackServerContext* ctx,
                                                           const v1::WatchRequest* req) {
  Caller who;
  if (auto st = identity_->User(*ctx, &who); !st.ok()) return new RejectedWatch(st);
  return new WatchReactor(io_, controller_, who, *req);
}

grpc::ServerUnaryReactor* JobsService::Hold(grpc::CallbackServerContext* ctx, const v1::JobRef* req, v1::Job* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, who, req, resp](grpc::ServerUnaryReactor* r) {
    controller_->Hold(who, req->job_id(), AnswerJob(controller_, who, req->job_id(), r, resp));
  });
}

grpc::ServerUnaryReactor* JobsService::Requeue(grpc::CallbackServerContext* ctx, const v1::JobRef* req, v1::Job* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, who, req, resp](grpc::ServerUnaryReactor* r) {
    controller_->Requeue(who, req->job_id(), AnswerJob(controller_, who, req->job_id(), r, resp));
  });
}

grpc::ServerUnaryReactor* JobsService::Release(grpc::CallbackServerContext* ctx, const v1::JobRef* req, v1::Job* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, who, req, resp](grpc::ServerUnaryReactor* r) {
    controller_->Release(who, req->job_id(), AnswerJob(controller_, who, req->job_id(), r, resp));
  });
}

grpc::ServerUnaryReactor* JobsService::Update(grpc::CallbackServerContext* ctx, const v1::UpdateJobRequest* req,
                                              v1::Job* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, who, req, resp](grpc::ServerUnaryReactor* r) {
    controller_->Update(who, req->job_id(), JobUpdateFromProto(*req),
                        AnswerJob(controller_, who, req->job_id(), r, resp));
  });
}

grpc::ServerUnaryReactor* JobsService::ReportCheckpoint(grpc::CallbackServerContext* ctx,
                                                        const v1::ReportCheckpointRequest* req, v1::Job* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, who, req, resp](grpc::ServerUnaryReactor* r) {
    controller_->ReportCheckpoint(who, req->job_id(), req->epoch(), req->path(),
                                  AnswerJob(controller_, who, req->job_id(), r, resp));
  });
}

grpc::ServerUnaryReactor* JobsService::ListSlurmJobs(grpc::CallbackServerContext* ctx,
                                                     const v1::SlurmJobListRequest* req, v1::ListJobsResponse* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, who, req, resp](grpc::ServerUnaryReactor* r) {
    r->Finish(views::ListSlurmJobs(*controller_, who, *req, resp));
  });
}

grpc::ServerUnaryReactor* JobsService::GetSlurmJob(grpc::CallbackServerContext* ctx, const v1::SlurmJobRequest* req,
                                                   v1::Job* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, who, req, resp](grpc::ServerUnaryReactor* r) {
    r->Finish(views::GetSlurmJob(*controller_, who, *req, resp));
  });
}

}  // namespace phalanx::service
