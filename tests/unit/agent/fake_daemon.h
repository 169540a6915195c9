// FakeDaemon: an in-test Agents server (gRPC sync API on 127.0.0.1) standing in for phalanxd.
// It checks the bearer token (UNAUTHENTICATED otherwise), records every RegisterRequest and
// every AgentReport of its Connect streams, answers the stream's hello with a welcome, and
// lets a test push DaemonCommands down the current stream. Like a daemon older than ExitStored
// unless SetStoresExits(true): then its answers say it acknowledges exits (the test sends them).
// Thread-safety: all methods are thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "phalanx/v1/phalanx.grpc.pb.h"

namespace phalanx::agent::testing {

class FakeDaemon final : public v1::Agents::Service {
 public:
  // Listens on 127.0.0.1:port (0: any free port); plaintext unless `creds` is given.
  explicit FakeDaemon(std::string token, int port = 0, std::shared_ptr<grpc::ServerCredentials> creds = nullptr);
  ~FakeDaemon() override;

  int port() const { return port_; }
  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }
  void Shutdown();  // ends the streams, stops listening

  void SetKillJobs(std::vector<uint64_t> jobs);
  void SetStoresExits(bool stores);             // RegisterResponse.stores_exits, in Register and the welcome
  bool Send(const v1::DaemonCommand& command);  // false without a stream

  int unauthenticated() const;
  int streams() const;  // Connect calls accepted so far
  std::vector<v1::RegisterRequest> registers() const;
  std::vector<v1::AgentReport> reports() const;
  // The first PartExited / CheckpointReport for the launch / job, if one came.
  std::optional<v1::PartExited> Exited(uint64_t launch_id) const;
  std::optional<v1::CheckpointReport> Checkpoint(uint64_t job_id) const;
  // True once a heartbeat listed this launch id.
  bool HeartbeatListed(uint64_t launch_id) const;

  grpc::Status Register(grpc::ServerContext* ctx, const v1::RegisterRequest* request,
                        v1::RegisterResponse* response) override;
  grpc::Status Connect(grpc::ServerContext* ctx,
                       grpc::ServerReaderWriter<v1::DaemonCommand, v1::AgentReport>* stream) override;

 private:
  bool Authorized(grpc::ServerContext* ctx);

  const std::string token_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;

  mutable std::mutex mu_;
  std::vector<uint64_t> kill_jobs_;
  bool stores_exits_ = false;
  int unauthenticated_ = 0;
  int streams_ = 0;
  std::vector<v1::RegisterRequest> registers_;
  std::vector<v1::AgentReport> reports_;

  std::mutex write_mu_;
  grpc::ServerReaderWriter<v1::DaemonCommand, v1::AgentReport>* stream_ = nullptr;  // guarded by write_mu_
};

}  // namespace phalanx::agent::testing
