// AgentsService: the phalanx.v1.Agents gRPC service (callback API). Register is unary; Connect
// is a ServerBidiReactor: every AgentReport read is converted (proto_convert.h) and posted to
// the io thread (in order), and DaemonCommands are written through an OutStream AgentSessions
// holds for the node. Authentication (Identity::Agent) happens before anything reaches the
// sessions.
// Thread-safety: as JobsService.
#pragma once

#include <boost/asio/io_context.hpp>

#include "phalanx/v1/phalanx.grpc.pb.h"
#include "service/agent_sessions.h"
#include "service/identity.h"

namespace phalanx::service {

class AgentsService final : public v1::Agents::CallbackService {
 public:
  AgentsService(boost::asio::io_context& io, AgentSessions* sessions, const Identity* identity)
      : io_(io), sessions_(sessions), identity_(identity) {}

  grpc::ServerUnaryReactor* Register(grpc::CallbackServerContext* ctx, const v1::RegisterRequest* req,
                                     v1::RegisterResponse* resp) override;
  grpc::ServerBidiReactor<v1::AgentReport, v1::DaemonCommand>* Connect(grpc::CallbackServerContext* ctx) override;

 private:
  boost::asio::io_context& io_;
  AgentSessions* const sessions_;
  const Identity* const identity_;
};

}  // namespace phalanx::service
