#include "service/standby_gate.h"

#include <grpcpp/server_builder.h>
#include <grpcpp/server_posix.h>

#include <atomic>
#include <chrono>

#include "util/log.h"

namespace phalanx::service {

// One per gRPC server (a generic service belongs to one server): refuses every call.
class StandbyGate::Refuser {
 public:
  explicit Refuser(const StandbyGate* gate) : gate_(gate) {}

  class Service final : public grpc::CallbackGenericService {
   public:
    explicit Service(const StandbyGate* gate, std::atomic<uint64_t>* refused) : gate_(gate), refused_(refused) {}
    grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* /*ctx*/) override {
      class Reactor final : public grpc::ServerGenericBidiReactor {
       public:
        explicit Reactor(const std::string& why) { Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, why)); }
        void OnDone() override { delete this; }
      };
      refused_->fetch_add(1, std::memory_order_relaxed);
      return new Reactor(gate_->refusal());
    }

   private:
    const StandbyGate* const gate_;
    std::atomic<uint64_t>* const refused_;
  };

  Service* Make() {
    services_.push_back(std::make_unique<Service>(gate_, &refused_));
    return services_.back().get();
  }
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  const StandbyGate* const gate_;
  std::atomic<uint64_t> refused_{0};
  std::vector<std::unique_ptr<Service>> services_;
};

StandbyGate::StandbyGate() : refuser_(std::make_unique<Refuser>(this)) {}

StandbyGate::~StandbyGate() { Stop(); }

Result<std::unique_ptr<StandbyGate>> StandbyGate::Start(const Listen& listen) {
  std::unique_ptr<StandbyGate> g(new StandbyGate());
  auto build = [&g](const std::string& address, const std::shared_ptr<grpc::ServerCredentials>& creds,
                    const std::string& key) -> Result<std::unique_ptr<grpc::Server>> {
    grpc::ServerBuilder b;
    int port = 0;
    if (!address.empty()) b.AddListeningPort(address, creds, &port);
    b.RegisterCallbackGenericService(g->refuser_->Make());
    auto server = b.BuildAndStart();
    if (!server || (!address.empty() && port == 0)) return Fail(key, "standby: cannot listen on '" + address + "'");
    return server;
  };
  if (!listen.socket_path.empty()) {
    PHX_ASSIGN_OR_RETURN(g->local_, build("", nullptr, "socket"));
    g->listener_ = std::make_unique<UnixListener>(listen.socket_path, &g->peers_);
    PHX_RETURN_IF_ERROR(
        g->listener_->Start([server = g->local_.get()](int fd) { grpc::AddInsecureChannelFromFd(server, fd); }));
  }
  if (!listen.users_tcp.empty()) {
    PHX_ASSIGN_OR_RETURN(g->users_tcp_, build(listen.users_tcp, listen.users_tcp_creds, "users_tcp.listen"));
  }
  if (!listen.agents.empty()) {
    PHX_ASSIGN_OR_RETURN(g->agents_, build(listen.agents, listen.agents_creds, "agents.listen"));
  }
  return g;
}

void StandbyGate::SetLeader(const std::string& text) {
  MutexLock lock(&mu_);
  leader_ = text;
}

std::string StandbyGate::refusal() const {
  MutexLock lock(&mu_);
  return "standby: " + leader_ + "; try the next address";
}

uint64_t StandbyGate::refused() const { return refuser_->refused(); }

void StandbyGate::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (listener_) listener_->Stop();
  const auto deadline = std::chrono::system_clock::now() + std::chrono::seconds(1);
  for (auto* s : {&local_, &users_tcp_, &agents_}) {
    if (*s) (*s)->Shutdown(deadline);
  }
  for (auto* s : {&local_, &users_tcp_, &agents_}) {
    if (*s) (*s)->Wait();
    s->reset();
  }
}

}  // namespace phalanx::service
