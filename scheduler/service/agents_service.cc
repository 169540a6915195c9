#include "service/agents_service.h"

#include "service/proto_convert.h"
#include "service/rpc_util.h"

namespace phalanx::service {
namespace {

class AgentStream final : public grpc::ServerBidiReactor<v1::AgentReport, v1::DaemonCommand> {
 public:
  AgentStream(boost::asio::io_context& io, AgentSessions* sessions, std::string peer)
      : io_(io),
        sessions_(sessions),
        peer_(std::move(peer)),
        link_(std::make_shared<AgentLink>(AgentLink::Ops{[this](const v1::DaemonCommand* m) { StartWrite(m); },
                                                         [this](grpc::Status s) { Finish(std::move(s)); }},
                                          1000000)) {
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      Closed();
      link_->Close(grpc::Status::OK);
      return;
    }
    boost::asio::post(io_, [s = sessions_, link = link_, peer = peer_, report = AgentMessageFromProto(in_)] {
      s->Report(link, peer, report);
    });
    in_.Clear();
    StartRead(&in_);
  }
  void OnWriteDone(bool ok) override { link_->OnWriteDone(ok); }
  void OnCancel() override {
    Closed();
    link_->Close(grpc::Status::CANCELLED);
  }
  void OnDone() override {
    Closed();
    link_->Detach();
    delete this;
  }

 private:
  void Closed() {
    if (closed_.exchange(true)) return;
    boost::asio::post(io_, [s = sessions_, link = link_] { s->StreamClosed(link); });
  }

  boost::asio::io_context& io_;
  AgentSessions* const sessions_;
  const std::string peer_;
  std::shared_ptr<AgentLink> link_;
  v1::AgentReport in_;
  std::atomic<bool> closed_{false};
};

class RejectedStream final : public grpc::ServerBidiReactor<v1::AgentReport, v1::DaemonCommand> {
 public:
  explicit RejectedStream(grpc::Status status) { Finish(std::move(status)); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerUnaryReactor* AgentsService::Register(grpc::CallbackServerContext* ctx, const v1::RegisterRequest* req,
                                                  v1::RegisterResponse* resp) {
  if (auto st = identity_->Agent(*ctx); !st.ok()) return FinishNow(ctx, st);
  const std::string peer = PeerHost(ctx->peer());
  return OnIo(ctx, io_, [this, req, resp, peer](grpc::ServerUnaryReactor* r) {
    auto welcome = sessions_->Register(AgentHelloFromProto(*req), peer);
    if (!welcome) return r->Finish(ToGrpcStatus(welcome.error()));
    *resp = ToProto(*welcome);
    r->Finish(grpc::Status::OK);
  });
}

grpc::ServerBidiReactor<v1::AgentReport, v1::DaemonCommand>* AgentsService::Connect(grpc::CallbackServerContext* ctx) {
  if (auto st = identity_->Agent(*ctx); !st.ok()) return new RejectedStream(st);
  return new AgentStream(io_, sessions_, PeerHost(ctx->peer()));
}

}  // namespace phalanx::service
