#include "service/cluster_service.h"

#include "service/rpc_util.h"

namespace phalanx::service {

#define PHX_CALLER(ctx)                                                      \
  Caller who;                                                                \
  if (auto st = identity_->User(*(ctx), &who); !st.ok()) return FinishNow(ctx, st)

grpc::ServerUnaryReactor* ClusterService::GetTopology(grpc::CallbackServerContext* ctx, const v1::GetTopologyRequest*,
                                                      v1::GetTopologyResponse* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, resp](grpc::ServerUnaryReactor* r) { r->Finish(controller_->GetTopology(resp)); });
}

grpc::ServerUnaryReactor* ClusterService::ListNodes(grpc::CallbackServerContext* ctx, const v1::ListNodesRequest*,
                                                    v1::ListNodesResponse* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, resp](grpc::ServerUnaryReactor* r) { r->Finish(controller_->ListNodes(resp)); });
}

grpc::ServerUnaryReactor* ClusterService::SetNode(grpc::CallbackServerContext* ctx, const v1::NodeRequest* req, v1::Node* resp,
                                                  NodeState state) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, who, req, resp, state](grpc::ServerUnaryReactor* r) {
    controller_->SetNodeAdmin(who, *req, state, [r, resp](grpc::Status st, v1::Node n) {
      *resp = std::move(n);
      r->Finish(st);
    });
  });
}

grpc::ServerUnaryReactor* ClusterService::DrainNode(grpc::CallbackServerContext* ctx, const v1::NodeRequest* req, v1::Node* resp) {
  return SetNode(ctx, req, resp, NodeState::kDrain);
}

grpc::ServerUnaryReactor* ClusterService::ResumeNode(grpc::CallbackServerContext* ctx, const v1::NodeRequest* req, v1::Node* resp) {
  return SetNode(ctx, req, resp, NodeState::kUp);
}

grpc::ServerUnaryReactor* ClusterService::GetStats(grpc::CallbackServerContext* ctx, const v1::GetStatsRequest*,
                                                   v1::GetStatsResponse* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, resp](grpc::ServerUnaryReactor* r) { r->Finish(controller_->GetStats(resp)); });
}

grpc::ServerUnaryReactor* ClusterService::GetFragmentation(grpc::CallbackServerContext* ctx, const v1::GetFragmentationRequest*,
                                                           v1::GetFragmentationResponse* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, resp](grpc::ServerUnaryReactor* r) { r->Finish(controller_->GetFragmentation(resp)); });
}

grpc::ServerUnaryReactor* ClusterService::ExplainPending(grpc::CallbackServerContext* ctx, const v1::ExplainPendingRequest* req,
                                                         v1::ExplainPendingResponse* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, who, req, resp](grpc::ServerUnaryReactor* r) {
    r->Finish(controller_->ExplainPending(who, *req, resp));
  });
}

}  // namespace phalanx::service
