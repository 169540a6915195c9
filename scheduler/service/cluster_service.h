// ClusterService: the phalanx.v1.Cluster gRPC service (callback API): topology, nodes,
// drain/resume (admins), stats, fragmentation, pending-job explanations. Work runs on the io
// thread (the Controller's); answers are api_views.h's.
// Thread-safety: as JobsService.
#pragma once

#include <boost/asio/io_context.hpp>

#include "phalanx/v1/phalanx.grpc.pb.h"
#include "service/controller.h"
#include "service/identity.h"

namespace phalanx::service {

class ClusterService final : public v1::Cluster::CallbackService {
 public:
  ClusterService(boost::asio::io_context& io, Controller* controller, const Identity* identity)
      : io_(io), controller_(controller), identity_(identity) {}

  grpc::ServerUnaryReactor* GetTopology(grpc::CallbackServerContext* ctx, const v1::GetTopologyRequest* req,
                                        v1::GetTopologyResponse* resp) override;
  grpc::ServerUnaryReactor* ListNodes(grpc::CallbackServerContext* ctx, const v1::ListNodesRequest* req,
                                      v1::ListNodesResponse* resp) override;
  grpc::ServerUnaryReactor* DrainNode(grpc::CallbackServerContext* ctx, const v1::NodeRequest* req,
                                      v1::Node* resp) override;
  grpc::ServerUnaryReactor* ResumeNode(grpc::CallbackServerContext* ctx, const v1::NodeRequest* req,
                                       v1::Node* resp) override;
  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* ctx, const v1::GetStatsRequest* req,
                                     v1::GetStatsResponse* resp) override;
  grpc::ServerUnaryReactor* GetFragmentation(grpc::CallbackServerContext* ctx, const v1::GetFragmentationRequest* req,
                                             v1::GetFragmentationResponse* resp) override;
  grpc::ServerUnaryReactor* ExplainPending(grpc::CallbackServerContext* ctx, const v1::ExplainPendingRequest* req,
                                           v1::ExplainPendingResponse* resp) override;
  grpc::ServerUnaryReactor* ListPartitions(grpc::CallbackServerContext* ctx, const v1::PartitionListRequest* req,
                                           v1::PartitionListResponse* resp) override;
  grpc::ServerUnaryReactor* DownNode(grpc::CallbackServerContext* ctx, const v1::NodeRequest* req,
                                     v1::Node* resp) override;

 private:
  grpc::ServerUnaryReactor* SetNode(grpc::CallbackServerContext* ctx, const v1::NodeRequest* req, v1::Node* resp,
                                    NodeState state);

  boost::asio::io_context& io_;
  Controller* const controller_;
  const Identity* const identity_;
};

}  // namespace phalanx::service
