// What gRPC calls a connection handed over with AddInsecureChannelFromFd, and why the fd
// number identifies the caller (unix_listener.h): the peer is "fd:N"; while a call lives, its
// connection's fd stays open even after the client went away, so a new connection cannot get N
// and the registry's entry for N is still the caller's.
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/server_posix.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>

#include <atomic>

#include "daemon_harness.h"
#include "phalanx/v1/phalanx.grpc.pb.h"
#include "service/unix_listener.h"

namespace phalanx::service::testing {
namespace {

// Answers Submit with the caller's uid (as the registry resolves it) in job_id; a call named
// "hold" is kept open until the test releases it.
class EchoPeer final : public v1::Jobs::CallbackService {
 public:
  explicit EchoPeer(const PeerRegistry* peers) : peers_(peers) {}
  grpc::ServerUnaryReactor* Submit(grpc::CallbackServerContext* ctx, const v1::SubmitRequest* req,
                                   v1::SubmitResponse* resp) override {
    auto* r = ctx->DefaultReactor();
    auto cred = peers_->Lookup(ctx->peer());
    resp->set_job_id(cred ? cred->uid + 1 : 0);
    std::lock_guard<std::mutex> lock(mu);
    last_peer = ctx->peer();
    if (req->spec().name() == "hold") {
      held_peer = ctx->peer();
      held = r;
      held_cred_ok = cred.has_value();
      return r;
    }
    r->Finish(grpc::Status::OK);
    return r;
  }
  std::mutex mu;  // guards the strings and held_cred_ok (set on gRPC threads)
  std::string last_peer, held_peer;
  std::atomic<grpc::ServerUnaryReactor*> held{nullptr};
  bool held_cred_ok = false;

 private:
  const PeerRegistry* peers_;
};

// A Submit named `name` on a new connection; `ctx` (if given) is the call's, e.g. to cancel it
// from another thread. The deadline only guards against a hang.
uint64_t Call(const std::string& socket, const std::string& name, grpc::StatusCode* code = nullptr,
              grpc::ClientContext* ctx = nullptr) {
  auto ch = grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
  auto stub = v1::Jobs::NewStub(ch);
  grpc::ClientContext own;
  if (ctx == nullptr) ctx = &own;
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  v1::SubmitRequest req;
  req.mutable_spec()->set_name(name);
  v1::SubmitResponse resp;
  auto st = stub->Submit(ctx, req, &resp);
  if (code) *code = st.error_code();
  return resp.job_id();
}

TEST(PeerIdentity, FdChannelsAreNamedByFdAndTheFdOutlivesTheClientWhileACallLives) {
  TempDir dir;
  PeerRegistry peers;
  EchoPeer service(&peers);
  grpc::ServerBuilder b;
  b.RegisterService(&service);
  auto server = b.BuildAndStart();
  ASSERT_TRUE(server);
  UnixListener listener(dir.File("s.sock"), &peers);
  ASSERT_TRUE(listener.Start([s = server.get()](int fd) { grpc::AddInsecureChannelFromFd(s, fd); }));
  struct stat st {};
  ASSERT_EQ(stat(dir.File("s.sock").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666u);

  EXPECT_EQ(Call(dir.File("s.sock"), "x"), 1u) << "uid 0 + 1";
  std::unique_lock<std::mutex> lock(service.mu);
  ASSERT_TRUE(service.last_peer.starts_with("fd:")) << service.last_peer;
  lock.unlock();

  // A call that stays open while its client gives up (once the server holds the call) and goes
  // away (the client's channel is gone when Call returns).
  grpc::StatusCode code = grpc::StatusCode::OK;
  bool held = false;
  {
    grpc::ClientContext held_ctx;  // holds the channel: the client is gone only once it is
    std::thread client([&] { Call(dir.File("s.sock"), "hold", &code, &held_ctx); });
    held = WaitFor([&] { return service.held.load() != nullptr; }, std::chrono::seconds(60));
    held_ctx.TryCancel();
    client.join();
  }
  ASSERT_TRUE(held);
  EXPECT_EQ(code, grpc::StatusCode::CANCELLED);
  lock.lock();
  EXPECT_TRUE(service.held_cred_ok);
  const std::string held_peer = service.held_peer;
  lock.unlock();
  const int held_fd = std::stoi(held_peer.substr(3));
  // New connections never get the held call's fd, and resolve to their own entry.
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(Call(dir.File("s.sock"), "y"), 1u);
    lock.lock();
    EXPECT_NE(service.last_peer, held_peer);
    lock.unlock();
  }
  EXPECT_TRUE(peers.Lookup(held_peer).has_value()) << "still the same socket";
  struct stat fst {};
  EXPECT_EQ(fstat(held_fd, &fst), 0);
  service.held.load()->Finish(grpc::Status::CANCELLED);
  // Once the last call ended, gRPC closes the fd (and a later connection may reuse it).
  EXPECT_TRUE(
      WaitFor([&] { return fcntl(held_fd, F_GETFD) == -1 || !peers.Lookup(held_peer); }, std::chrono::seconds(60)));
  listener.Stop();
  server->Shutdown();
  EXPECT_NE(stat(dir.File("s.sock").c_str(), &st), 0) << "the socket file is removed";
}

TEST(PeerIdentity, ALiveSocketIsNotTakenOverAndAStaleOneIsReplaced) {
  TempDir dir;
  PeerRegistry peers;
  UnixListener first(dir.File("s.sock"), &peers);
  ASSERT_TRUE(first.Start([](int fd) { close(fd); }));
  UnixListener second(dir.File("s.sock"), &peers);
  auto st = second.Start([](int fd) { close(fd); });
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().ToString().find("another daemon is listening"), std::string::npos) << st.error().ToString();
  first.Stop();
  // A socket file nobody listens on (a daemon that died) is replaced.
  {
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", dir.File("s.sock").c_str());
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    close(fd);
  }
  UnixListener third(dir.File("s.sock"), &peers);
  EXPECT_TRUE(third.Start([](int fd) { close(fd); }));
}

}  // namespace
}  // namespace phalanx::service::testing
