// Users over TCP (users_tcp, docs/daemon.md "Users over TCP") on the in-process daemon, with a
// private munged: calls with a credential per call are served as the credential's uid (here
// root) on many threads at once (TSan runs this), Watch streams too; calls without one or with
// a rebound one are refused, the Unix socket is unaffected. The other namespace, nobody and
// the forged/replayed/expired credentials: tests/integration/users_tcp_munge_test.sh.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "call_auth.h"
#include "daemon_harness.h"
#include "private_munged.h"
#include "service/controller.h"

namespace phalanx::service::testing {
namespace {

constexpr char kList[] = "/phalanx.v1.Jobs/List";

class UsersTcp : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!auth::HaveMunge()) GTEST_SKIP() << "built without libmunge";
    ASSERT_TRUE(munged_.started()) << "munged did not start (config/install-deps.sh installs munge)";
    h_.config.users_tcp.listen = "127.0.0.1:0";
    h_.config.users_tcp.munge_socket = munged_.socket();
    h_.Start();
    ASSERT_GT(h_.daemon->users_tcp_port(), 0);
    tcp_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(h_.daemon->users_tcp_port()),
                               grpc::InsecureChannelCredentials());
    jobs_ = v1::Jobs::NewStub(tcp_);
  }

  std::string Credential(std::string_view method, const google::protobuf::MessageLite& request) {
    auto cred = auth::MungeEncode(munged_.socket(), auth::CallPayload(method, request));
    EXPECT_TRUE(cred.has_value()) << cred.error().message;
    return cred.value_or("");
  }
  grpc::Status List(const v1::ListJobsRequest& req, const std::string* cred, v1::ListJobsResponse* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    if (cred != nullptr) ctx.AddMetadata(auth::kMungeMetadata, *cred);
    return jobs_->List(&ctx, req, resp);
  }

  Harness h_;
  PrivateMunged munged_{h_.dir.File("")};
  std::shared_ptr<grpc::Channel> tcp_;
  std::unique_ptr<v1::Jobs::Stub> jobs_;
};

TEST_F(UsersTcp, SubmitAndListAsTheCredentialsUid) {
  v1::SubmitRequest submit;
  *submit.mutable_spec() = Harness::Spec(8, "over-tcp");
  const std::string cred = Credential("/phalanx.v1.Jobs/Submit", submit);
  grpc::ClientContext ctx;
  ctx.AddMetadata(auth::kMungeMetadata, cred);
  v1::SubmitResponse resp;
  grpc::Status st = jobs_->Submit(&ctx, submit, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  // The owner is the credential's uid (this process, root), as on the socket.
  const v1::Job job = h_.Get(resp.job_id());
  EXPECT_EQ(job.spec().name(), "over-tcp");
  EXPECT_EQ(job.user(), "root");

  v1::ListJobsRequest all;
  v1::ListJobsResponse listed;
  const std::string list_cred = Credential(kList, all);
  st = List(all, &list_cred, &listed);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(listed.jobs_size(), 1);
  EXPECT_EQ(listed.jobs(0).id(), resp.job_id());

  // Without a credential, or with one made for another request: nothing.
  v1::ListJobsResponse none;
  st = List(all, nullptr, &none);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(none.jobs_size(), 0);
  v1::ListJobsRequest limited;
  limited.set_limit(1);
  const std::string other = Credential(kList, limited);
  st = List(all, &other, &none);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(st.error_message().find("made for another call"), std::string::npos) << st.error_message();
  // The submit's credential again (replayed) on the same request: refused.
  grpc::ClientContext again;
  again.AddMetadata(auth::kMungeMetadata, cred);
  st = jobs_->Submit(&again, submit, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(st.error_message().find("replayed"), std::string::npos) << st.error_message();
  // The Unix socket still serves, and sees the one job.
  v1::ListJobsResponse local;
  grpc::ClientContext lctx;
  ASSERT_TRUE(h_.jobs->List(&lctx, all, &local).ok());
  EXPECT_EQ(local.jobs_size(), 1);
}

TEST_F(UsersTcp, ConcurrentCallsEachGetTheirOwnVerdict) {
  // Good and missing credentials interleaved on 4 threads over one channel: every good call is
  // served, every call without a credential refused (a verdict never leaks to another call).
  std::atomic<int> served{0}, refused{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 15; ++i) {
        v1::ListJobsRequest req;
        req.set_limit(static_cast<uint32_t>(1 + t * 100 + i));  // a distinct request per call
        v1::ListJobsResponse resp;
        if ((i + t) % 2 == 0) {
          const std::string cred = Credential(kList, req);
          (List(req, &cred, &resp).ok() ? served : wrong)++;
        } else {
          (List(req, nullptr, &resp).error_code() == grpc::StatusCode::UNAUTHENTICATED ? refused : wrong)++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(served.load(), 30);
  EXPECT_EQ(refused.load(), 30);
}

TEST_F(UsersTcp, WatchNeedsACredentialToo) {
  v1::WatchRequest req;
  {
    grpc::ClientContext ctx;
    auto stream = jobs_->Watch(&ctx, req);
    v1::JobEvent ev;
    EXPECT_FALSE(stream->Read(&ev));
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  grpc::ClientContext ctx;
  ctx.AddMetadata(auth::kMungeMetadata, Credential("/phalanx.v1.Jobs/Watch", req));
  auto stream = jobs_->Watch(&ctx, req);
  // The watch is registered on the io thread once its credential is checked; a job submitted
  // before that would not be seen (the test hung in Read once, on a loaded machine).
  ASSERT_TRUE(WaitFor([&] {
    size_t n = 0;
    h_.daemon->RunOnIo([&](Controller& c) { n = c.watcher_count(); });
    return n == 1;
  }));
  const uint64_t id = h_.SubmitOk(Harness::Spec(8, "watched"));  // through the socket
  v1::JobEvent ev;
  ASSERT_TRUE(stream->Read(&ev));
  EXPECT_EQ(ev.job().id(), id);
  ctx.TryCancel();
  v1::JobEvent rest;
  while (stream->Read(&rest)) {
  }
  (void)stream->Finish();
}

}  // namespace
}  // namespace phalanx::service::testing
