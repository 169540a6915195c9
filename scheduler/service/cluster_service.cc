#include "service/cluster_service.h"

#include "service/api_views.h"
#include "service/rpc_util.h"

namespace phalanx::service {

#define PHX_CALLER(ctx) \
  Caller who;           \
  if (auto st = identity_->User(*(ctx), &who); !st.ok()) return FinishNow(ctx, st)

grpc::ServerUnaryReactor* ClusterService::GetTopology(grpc::CallbackServerContext* ctx, const v1::GetTopologyRequest*,
                                                      v1::GetTopologyResponse* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_,
              [this, resp](grpc::ServerUnaryReactor* r) { r->Finish(views::GetTopology(*controller_, resp)); });
}

grpc::ServerUnaryReactor* ClusterService::ListNodes(grpc::CallbackServerContext* ctx, const v1::ListNodesRequest*,
                                                    v1::ListNodesResponse* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, resp](grpc::ServerUnaryReactor* r) { r->Finish(views::ListNodes(*controller_, resp)); });
}

grpc::ServerUnaryReactor* ClusterService::SetNode(grpc::CallbackServerContext* ctx, const v1::NodeRequest* req,
                                                  v1::Node* resp, NodeState state) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, who, req, resp, state](grpc::ServerUnaryReactor* r) {
    controller_->SetNodeAdmin(who, req->node(), state, req->reason(), [this, r, req, resp](CallStatus st) {
      if (st) views::FillNode(*controller_, req->node(), resp);
      r->Finish(ToGrpcStatus(st));
    });
  });
}

grpc::ServerUnaryReactor* ClusterService::DrainNode(grpc::CallbackServerContext* ctx, const v1::NodeRequest* req,
                                                    v1::Node* resp) {
  return SetNode(ctx, req, resp, NodeState::kDrain);
}

grpc::ServerUnaryReactor* ClusterService::ResumeNode(grpc::CallbackServerContext* ctx, const v1::NodeRequest* req,
                                                     v1::Node* resp) {
  return SetNode(ctx, req, resp, NodeState::kUp);
}

grpc::ServerUnaryReactor* ClusterService::DownNode(grpc::CallbackServerContext* ctx, const v1::NodeRequest* req,
                                                   v1::Node* resp) {
  return SetNode(ctx, req, resp, NodeState::kDown);
}

grpc::ServerUnaryReactor* ClusterService::ListPartitions(grpc::CallbackServerContext* ctx,
                                                         const v1::PartitionListRequest*,
                                                         v1::PartitionListResponse* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_,
              [this, resp](grpc::ServerUnaryReactor* r) { r->Finish(views::ListPartitions(*controller_, resp)); });
}

grpc::ServerUnaryReactor* ClusterService::GetStats(grpc::CallbackServerContext* ctx, const v1::GetStatsRequest*,
                                                   v1::GetStatsResponse* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, resp](grpc::ServerUnaryReactor* r) { r->Finish(views::GetStats(*controller_, resp)); });
}

grpc::ServerUnaryReactor* ClusterService::GetFragmentation(grpc::CallbackServerContext* ctx,
                                                           const v1::GetFragmentationRequest*,
                                                           v1::GetFragmentationResponse* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_,
              [this, resp](grpc::ServerUnaryReactor* r) { r->Finish(views::GetFragmentation(*controller_, resp)); });
}

grpc::ServerUnaryReactor* ClusterService::ExplainPending(grpc::CallbackServerContext* ctx,
                                                         const v1::ExplainPendingRequest* req,
                                                         v1::ExplainPendingResponse* resp) {
  PHX_CALLER(ctx);
  return OnIo(ctx, io_, [this, who, req, resp](grpc::ServerUnaryReactor* r) {
    r->Finish(views::ExplainPending(*controller_, who, *req, resp));
  });
}

}  // namespace phalanx::service
