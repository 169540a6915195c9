// StandbyGate (service/standby_gate.h): a standby phalanxd's listeners refuse every call with
// UNAVAILABLE "standby: <leader>; try the next address", over the real Unix socket and TCP, and
// free their addresses on Stop so the daemon can bind them as the leader.
#include "service/standby_gate.h"

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>

#include "phalanx/v1/phalanx.grpc.pb.h"

namespace phalanx::service {
namespace {

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

TEST(StandbyGate, RefusesEveryCallNamingTheLeaderAndFreesItsAddresses) {
  char tmpl[] = "/tmp/phx-standby-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, sock = dir + "/phalanxd.sock";
  const std::string tcp = "127.0.0.1:" + std::to_string(FreePort());
  StandbyGate::Listen listen;
  listen.socket_path = sock;
  listen.agents = tcp;
  listen.agents_creds = grpc::InsecureServerCredentials();
  auto gate = StandbyGate::Start(listen);
  ASSERT_TRUE(gate) << gate.error().ToString();
  (*gate)->SetLeader("the leader is sched1:4242 (epoch 3, lease ends in 900 ms)");
  const std::string want = "standby: the leader is sched1:4242 (epoch 3, lease ends in 900 ms); try the next address";

  auto local = grpc::CreateChannel("unix:" + sock, grpc::InsecureChannelCredentials());
  auto jobs = v1::Jobs::NewStub(local);
  grpc::ClientContext c1;
  c1.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::Job job;
  v1::GetJobRequest get;
  get.set_job_id(1);
  grpc::Status st = jobs->Get(&c1, get, &job);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(st.error_message(), want);

  auto agents = v1::Agents::NewStub(grpc::CreateChannel(tcp, grpc::InsecureChannelCredentials()));
  grpc::ClientContext c2;
  c2.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::RegisterResponse reg;
  st = agents->Register(&c2, v1::RegisterRequest(), &reg);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(st.error_message(), want);
  EXPECT_EQ((*gate)->refused(), 2u);

  (*gate)->Stop();
  EXPECT_FALSE(std::filesystem::exists(sock));
  grpc::ServerBuilder b;  // the leader binds the same address next
  int port = 0;
  b.AddListeningPort(tcp, grpc::InsecureServerCredentials(), &port);
  grpc::CallbackGenericService any;  // a server needs a service
  b.RegisterCallbackGenericService(&any);
  auto server = b.BuildAndStart();
  ASSERT_NE(server, nullptr);
  EXPECT_NE(port, 0);
  server->Shutdown();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace phalanx::service
