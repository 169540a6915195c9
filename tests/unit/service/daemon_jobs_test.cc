// phalanxd over its real Unix socket: submissions acknowledged once in the store file, reads,
// cancel/hold/release, INVALID_ARGUMENT and NOT_FOUND messages, another user's permissions
// (a forked client running as nobody), Watch, gRPC health checking.
#include <grp.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <future>
#include <map>
#include <set>

#include "adapters/store/store.h"
#include "daemon_harness.h"
#include "service/controller.h"

namespace phalanx::service::testing {
namespace {

// Runs the permission client (perm_client.cc) as nobody against root's job `id`; its one line
// of "name=code" results, or "exit status N: ..." when it did not exit 0.
std::string RunPermClientAsNobody(Harness& h, uint64_t id) {
  int out[2];
  if (pipe(out) != 0) return "pipe failed";
  const std::string job = std::to_string(id);
  const pid_t pid = fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    execl(PERM_CLIENT, PERM_CLIENT, h.config.socket_path.c_str(), job.c_str(), static_cast<char*>(nullptr));
    _exit(4);
  }
  close(out[1]);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "exit status " + std::to_string(status) + ": " + text;
  return text;
}

TEST(DaemonJobs, SubmitIsAcknowledgedOnceTheJobIsInTheStoreFile) {
  Harness h;
  h.Start();
  v1::JobSpec spec = Harness::Spec(4, "train");
  const uint64_t id = h.SubmitOk(spec);
  ASSERT_GT(id, 0u);
  // The acknowledgement means the store file has it: read it through a second connection.
  auto store = store::Store::Open(h.config.db_path);
  ASSERT_TRUE(store) << store.error().ToString();
  auto rec = (*store)->LoadJob(id);
  ASSERT_TRUE(rec && rec->has_value());
  EXPECT_EQ((*rec)->spec.name, "train");
  EXPECT_EQ((*rec)->spec.user, "root");
  EXPECT_EQ((*rec)->spec.shape.gpus, 4u);
  auto launch = (*store)->LoadLaunchInfo(id);
  ASSERT_TRUE(launch && launch->has_value());
  v1::Job info;
  ASSERT_TRUE(info.ParseFromString(**launch));
  EXPECT_EQ(info.spec().command(0), "/bin/true");
  EXPECT_EQ(info.spec().env().at("SECRET"), "xyzzy");
  EXPECT_EQ(info.uid(), 0u);

  // No agent has registered: every node is down, the job waits.
  v1::Job job = h.Get(id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(job.user(), "root");
  EXPECT_EQ(job.spec().env_size(), 0) << "env only when asked for";
  EXPECT_EQ(h.Get(id, true).spec().env().at("SECRET"), "xyzzy");
  ASSERT_TRUE(WaitFor([&] { return !h.Get(id).reason().empty(); }));

  const uint64_t second = h.SubmitOk(Harness::Spec(1));
  EXPECT_EQ(second, id + 1);
  grpc::ClientContext ctx;
  v1::ListJobsRequest req;
  v1::ListJobsResponse resp;
  ASSERT_TRUE(h.jobs->List(&ctx, req, &resp).ok());
  ASSERT_EQ(resp.jobs_size(), 2);
  EXPECT_EQ(resp.jobs(0).id(), id);
  EXPECT_EQ(resp.jobs(1).id(), second);
}

// Concurrent clients: every acknowledged submission has its own id and is in the store file
// (group commit under load); the rate is printed for a rough idea.
TEST(DaemonJobs, ConcurrentSubmissionsAreAllDurableWithDistinctIds) {
  Harness h;
  h.Start();
  constexpr int kThreads = 4, kEach = 250;
  std::vector<std::vector<uint64_t>> ids(kThreads);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto ch = grpc::CreateChannel("unix:" + h.config.socket_path, grpc::InsecureChannelCredentials());
      auto stub = v1::Jobs::NewStub(ch);
      for (int i = 0; i < kEach; ++i) {
        grpc::ClientContext ctx;
        v1::SubmitRequest req;
        *req.mutable_spec() = Harness::Spec(1 + (i % 8));
        v1::SubmitResponse resp;
        if (stub->Submit(&ctx, req, &resp).ok()) ids[t].push_back(resp.job_id());
      }
    });
  }
  for (auto& th : threads) th.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::set<uint64_t> all;
  for (const auto& v : ids) all.insert(v.begin(), v.end());
  ASSERT_EQ(all.size(), static_cast<size_t>(kThreads * kEach));
  std::printf("%d submissions from %d clients in %.2f s (%.0f/s)\n", kThreads * kEach, kThreads, secs,
              kThreads * kEach / secs);
  auto store = store::Store::Open(h.config.db_path);
  ASSERT_TRUE(store);
  auto state = (*store)->LoadAll();
  ASSERT_TRUE(state);
  EXPECT_EQ(state->jobs.size(), all.size());
  EXPECT_EQ(state->launch.size(), all.size());
}

TEST(DaemonJobs, BadRequestsNameTheFieldAndUnknownJobsAreNotFound) {
  Harness h;
  h.Start();
  struct Case {
    std::function<void(v1::JobSpec&)> edit;
    std::string expect;
  };
  const Case cases[] = {
      {[](v1::JobSpec& s) { s.set_gpus(0); }, "spec.gpus: must be at least 1 (got 0)"},
      {[](v1::JobSpec& s) { s.set_priority_class("vip"); }, "priority_class"},
      {[](v1::JobSpec& s) { s.set_walltime_s(9'999'999); }, "walltime 9999999s exceeds the maximum 604800s"},
      {[](v1::JobSpec& s) { s.set_walltime_s(99'999'999); },
       "spec.walltime_s: 99999999s is more than 31536000s (365 days)"},
      {[](v1::JobSpec& s) { s.set_gpus(64); }, "can never fit this cluster"},
      {[](v1::JobSpec& s) { s.add_after_ok(777); }, "after_ok: dependency on unknown job 777"},
      {[](v1::JobSpec& s) { s.clear_command(); }, "spec.command: empty"},
  };
  for (const Case& c : cases) {
    v1::JobSpec s = Harness::Spec(2);
    c.edit(s);
    uint64_t id = 0;
    auto st = h.Submit(s, &id);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.expect;
    EXPECT_NE(st.error_message().find(c.expect), std::string::npos) << st.error_message() << "\nwanted: " << c.expect;
  }
  grpc::Status st;
  h.Get(4242, false, &st);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(st.error_message(), "job 4242: no such job");
  EXPECT_EQ(h.Cancel(4242).error_code(), grpc::StatusCode::NOT_FOUND);
  grpc::ClientContext ctx;
  v1::ExplainPendingRequest req;
  req.set_job_id(4242);
  v1::ExplainPendingResponse resp;
  EXPECT_EQ(h.cluster->ExplainPending(&ctx, req, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
}

// Issue 12: a raw gRPC client (not gsub) sent a NUL in a job name (gq's output stopped there) and
// elastic_step=4294967295 (the job ran on 8 GPUs). Over the real socket both are refused with a
// message naming the field and showing the value escaped; nothing is stored; names with Unicode
// pass; a rename to a hostile name is refused too.
TEST(DaemonJobs, RawGrpcHostileSpecsAreRefusedLikeGsubWould) {
  Harness h;
  h.Start();
  v1::JobSpec nul = Harness::Spec(2, std::string("train\0hidden", 12));
  uint64_t id = 0;
  grpc::Status st = h.Submit(nul, &id);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(),
            "spec.name: 'train\\x00hidden' contains a NUL byte (byte 5); control characters are not allowed");

  v1::JobSpec step = Harness::Spec(8);
  step.set_min_gpus(1);
  step.set_elastic_step_kind(v1::ELASTIC_STEP_MULTIPLE);
  step.set_elastic_step(4294967295u);
  st = h.Submit(step, &id);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "spec.elastic_step: 4294967295 is more than gpus 8 (1..8)");

  v1::JobSpec esc = Harness::Spec(2, "x\n2026-12-01T00:00:00.000Z INFO  forged\x1b[2J");
  st = h.Submit(esc, &id);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(
      st.error_message().find("spec.name: 'x\\n2026-12-01T00:00:00.000Z INFO  forged\\x1b[2J' contains a newline"),
      std::string::npos)
      << st.error_message();
  EXPECT_EQ(st.error_message().find_first_of(std::string("\n\x1b\0", 3)), std::string::npos);

  grpc::ClientContext lctx;
  v1::ListJobsRequest lreq;
  v1::ListJobsResponse listed;
  ASSERT_TRUE(h.jobs->List(&lctx, lreq, &listed).ok());
  EXPECT_EQ(listed.jobs_size(), 0);  // nothing refused was stored

  const uint64_t ok = h.SubmitOk(Harness::Spec(2, "训练-🚀-café"));
  EXPECT_EQ(h.Get(ok).spec().name(), "训练-🚀-café");
  grpc::ClientContext uctx;
  v1::UpdateJobRequest ureq;
  ureq.set_job_id(ok);
  ureq.set_name("a\rb");
  v1::Job updated;
  st = h.jobs->Update(&uctx, ureq, &updated);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("name: 'a\\rb' contains a carriage return"), std::string::npos)
      << st.error_message();
  EXPECT_EQ(h.Get(ok).spec().name(), "训练-🚀-café");
}

TEST(DaemonJobs, CancelHoldReleaseAndWatch) {
  Harness h;
  h.Start();
  // Watch everything, from the start.
  grpc::ClientContext wctx;
  v1::WatchRequest wreq;
  auto watch = h.jobs->Watch(&wctx, wreq);
  std::vector<std::string> seen;
  std::mutex mu;
  std::thread reader([&] {
    v1::JobEvent ev;
    while (watch->Read(&ev)) {
      std::lock_guard<std::mutex> lock(mu);
      seen.push_back(ev.kind() + ":" + std::to_string(ev.job().id()));
    }
  });
  // The watch is registered on the io thread; a job submitted after that is seen.
  ASSERT_TRUE(WaitFor([&] {
    size_t n = 0;
    h.daemon->RunOnIo([&](Controller& c) { n = c.watcher_count(); });
    return n == 1;
  }));
  const uint64_t id = h.SubmitOk(Harness::Spec(2));
  grpc::ClientContext hctx;
  v1::JobRef ref;
  ref.set_job_id(id);
  v1::Job held;
  ASSERT_TRUE(h.jobs->Hold(&hctx, ref, &held).ok());
  EXPECT_TRUE(held.held());
  grpc::ClientContext hctx2;
  auto again = h.jobs->Hold(&hctx2, ref, &held);
  EXPECT_EQ(again.error_code(), grpc::StatusCode::OK) << "holding a held pending job is allowed by the core";
  grpc::ClientContext rctx;
  v1::Job released;
  ASSERT_TRUE(h.jobs->Release(&rctx, ref, &released).ok());
  EXPECT_FALSE(released.held());
  ASSERT_TRUE(h.Cancel(id).ok());
  EXPECT_EQ(h.State(id), v1::JOB_STATE_CANCELLED);
  auto twice = h.Cancel(id);
  EXPECT_EQ(twice.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(twice.error_message().find("already cancelled"), std::string::npos) << twice.error_message();
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(mu);
    return std::find(seen.begin(), seen.end(), "cancel:" + std::to_string(id)) != seen.end();
  }));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(seen.front(), "submit:" + std::to_string(id));
  }
  wctx.TryCancel();
  reader.join();
  (void)watch->Finish();
}

// Another user, in another process: a client forked from the test (root) that setuid()s to
// nobody and execs a small client. It may list and read root's job (without the environment)
// but not cancel, hold or read the environment of it, nor drain nodes; its own job it may cancel.
TEST(DaemonJobs, AnotherUserMayReadButNotTouchRootsJobs) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to become nobody";
  Harness h;
  h.Start();
  const uint64_t id = h.SubmitOk(Harness::Spec(2));
  const std::string text = RunPermClientAsNobody(h, id);
  ASSERT_FALSE(text.starts_with("exit status")) << text;
  const auto code = [](grpc::StatusCode c) { return std::to_string(static_cast<int>(c)); };
  EXPECT_NE(text.find("cancel=" + code(grpc::StatusCode::PERMISSION_DENIED) + " "), std::string::npos) << text;
  EXPECT_NE(text.find("env=" + code(grpc::StatusCode::PERMISSION_DENIED) + " "), std::string::npos) << text;
  EXPECT_NE(text.find("get=0 get_env_size=0 owner=root "), std::string::npos) << text;
  EXPECT_NE(text.find("hold=" + code(grpc::StatusCode::PERMISSION_DENIED) + " "), std::string::npos) << text;
  EXPECT_NE(text.find("list=0 listed=1 "), std::string::npos) << text;
  EXPECT_NE(text.find("drain=" + code(grpc::StatusCode::PERMISSION_DENIED) + " "), std::string::npos) << text;
  EXPECT_NE(text.find("submit=0 own_user=nobody own_uid=65534 cancel_own=0 "), std::string::npos) << text;
  EXPECT_EQ(h.State(id), v1::JOB_STATE_PENDING);
}

// Watch with a user: only that user's jobs (initial states and events); without one, everyone's.
// root's jobs and nobody's (submitted and cancelled by the permission client, run as nobody).
TEST(DaemonJobs, WatchFiltersByUser) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to become nobody";
  Harness h;
  h.Start();
  const uint64_t early = h.SubmitOk(Harness::Spec(1, "before-the-watch"));
  struct Watch {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<v1::JobEvent>> stream;
    std::thread reader;
    std::mutex mu;
    std::vector<std::pair<std::string, uint64_t>> seen;  // (kind, job)
    std::set<std::string> users;
    std::vector<std::pair<std::string, uint64_t>> Seen() {
      std::lock_guard<std::mutex> lock(mu);
      return seen;
    }
  };
  std::map<std::string, std::unique_ptr<Watch>> watches;
  for (const std::string user : {"", "root", "nobody"}) {
    auto w = std::make_unique<Watch>();
    v1::WatchRequest req;
    req.set_user(user);
    req.set_send_initial(true);
    w->stream = h.jobs->Watch(&w->ctx, req);
    Watch* raw = w.get();
    w->reader = std::thread([raw] {
      v1::JobEvent ev;
      while (raw->stream->Read(&ev)) {
        std::lock_guard<std::mutex> lock(raw->mu);
        raw->seen.emplace_back(ev.kind(), ev.job().id());
        raw->users.insert(ev.job().user());
      }
    });
    watches[user] = std::move(w);
  }
  ASSERT_TRUE(WaitFor([&] {
    size_t n = 0;
    h.daemon->RunOnIo([&](Controller& c) { n = c.watcher_count(); });
    return n == 3;
  }));
  const uint64_t mine = h.SubmitOk(Harness::Spec(2, "root's"));
  const std::string text = RunPermClientAsNobody(h, mine);  // submits and cancels a job of nobody's
  ASSERT_NE(text.find("cancel_own=0 "), std::string::npos) << text;
  uint64_t theirs = 0;
  {
    grpc::ClientContext ctx;
    v1::ListJobsRequest req;
    req.set_user("nobody");
    req.set_include_finished(true);
    v1::ListJobsResponse resp;
    ASSERT_TRUE(h.jobs->List(&ctx, req, &resp).ok());
    ASSERT_EQ(resp.jobs_size(), 1);
    theirs = resp.jobs(0).id();
  }
  ASSERT_TRUE(h.Cancel(mine).ok());
  using Event = std::pair<std::string, uint64_t>;
  const auto has = [](const std::vector<Event>& seen, const Event& e) {
    return std::find(seen.begin(), seen.end(), e) != seen.end();
  };
  ASSERT_TRUE(WaitFor([&] {
    return has(watches[""]->Seen(), {"cancel", mine}) && has(watches["root"]->Seen(), {"cancel", mine}) &&
           has(watches["nobody"]->Seen(), {"cancel", theirs});
  }));
  for (auto& [user, w] : watches) {
    w->ctx.TryCancel();
    w->reader.join();
    (void)w->stream->Finish();
  }
  const auto all = watches[""]->Seen();
  EXPECT_TRUE(has(all, {"state", early}));
  EXPECT_TRUE(has(all, {"submit", mine}));
  EXPECT_TRUE(has(all, {"submit", theirs}));
  EXPECT_TRUE(has(all, {"cancel", theirs}));
  const auto root = watches["root"]->Seen();
  EXPECT_TRUE(has(root, {"state", early}));
  EXPECT_TRUE(has(root, {"submit", mine}));
  EXPECT_EQ(watches["root"]->users, std::set<std::string>{"root"});
  const auto nobody = watches["nobody"]->Seen();
  EXPECT_TRUE(has(nobody, {"submit", theirs}));
  EXPECT_FALSE(has(nobody, {"state", early})) << "root's job is not in nobody's initial states";
  EXPECT_EQ(watches["nobody"]->users, std::set<std::string>{"nobody"});
}

TEST(DaemonJobs, HealthCheckingIsOnAndTcpPeersAreNotUsers) {
  Harness h;
  h.Start();
  // grpc.health.v1.Health/Check with an empty request (the server as a whole): SERVING = 1.
  grpc::GenericStub generic(h.channel);
  grpc::ClientContext ctx;
  grpc::Slice empty{std::string()};
  grpc::ByteBuffer req(&empty, 1), resp;
  std::promise<grpc::Status> done;
  generic.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &req, &resp,
                    [&](grpc::Status st) { done.set_value(st); });
  ASSERT_TRUE(done.get_future().get().ok());
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(resp.Dump(&slices).ok());
  std::string bytes;
  for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  EXPECT_EQ(bytes, std::string("\x08\x01", 2));
  // Server reflection: ServerReflectionInfo with list_services lists the API's services.
  {
    grpc::CompletionQueue cq;
    grpc::ClientContext rctx;
    auto call = generic.PrepareCall(&rctx, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
    void* tag = nullptr;
    bool ok = false;
    const auto step = [&](intptr_t t) {
      EXPECT_TRUE(cq.Next(&tag, &ok));
      EXPECT_EQ(reinterpret_cast<intptr_t>(tag), t);
      return ok;
    };
    call->StartCall(reinterpret_cast<void*>(1));
    ASSERT_TRUE(step(1));
    grpc::Slice list{std::string("\x3a\x00", 2)};  // field 7 (list_services) = ""
    grpc::ByteBuffer rreq(&list, 1), rresp;
    call->Write(rreq, reinterpret_cast<void*>(2));
    ASSERT_TRUE(step(2));
    call->Read(&rresp, reinterpret_cast<void*>(3));
    ASSERT_TRUE(step(3));
    std::vector<grpc::Slice> rs;
    ASSERT_TRUE(rresp.Dump(&rs).ok());
    std::string text;
    for (const auto& sl : rs) text.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
    EXPECT_NE(text.find("phalanx.v1.Jobs"), std::string::npos);
    EXPECT_NE(text.find("phalanx.v1.Cluster"), std::string::npos);
    call->WritesDone(reinterpret_cast<void*>(4));
    step(4);
    grpc::Status fin;
    call->Finish(&fin, reinterpret_cast<void*>(5));
    step(5);
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
  }
  // The agents' TCP port serves only the Agents service.
  auto tcp = grpc::CreateChannel(h.AgentTarget(), grpc::InsecureChannelCredentials());
  auto stub = v1::Jobs::NewStub(tcp);
  grpc::ClientContext lctx;
  v1::ListJobsRequest lreq;
  v1::ListJobsResponse lresp;
  EXPECT_EQ(stub->List(&lctx, lreq, &lresp).error_code(), grpc::StatusCode::UNIMPLEMENTED);
}

TEST(DaemonJobs, HttpServesHealthMetricsAndJobsWithoutTheEnvironment) {
  Harness h;
  h.config.http_listen = "127.0.0.1:0";
  h.config.history_interval_s = 1;
  h.Start();
  const int port = h.daemon->http_port();
#ifdef PHALANX_HAVE_HTTP
  ASSERT_GT(port, 0) << "built with HTTP, yet no HTTP listener on 127.0.0.1:0";
#else
  GTEST_SKIP() << "built without the HTTP library";
#endif
  const uint64_t id = h.SubmitOk(Harness::Spec(2, "web"));
  EXPECT_EQ(HttpGet(port, "/healthz"), std::make_pair(200, std::string("ok\n")));
  auto [code, body] = HttpGet(port, "/api/v1/jobs/" + std::to_string(id));
  EXPECT_EQ(code, 200);
  EXPECT_NE(body.find("\"name\":\"web\""), std::string::npos) << body;
  EXPECT_EQ(body.find("xyzzy"), std::string::npos) << "never the environment: " << body;
  EXPECT_EQ(HttpGet(port, "/api/v1/jobs/99").first, 404);
  EXPECT_EQ(HttpGet(port, "/api/v1/jobs/x").first, 400);
  EXPECT_EQ(HttpGet(port, "/api/v1/jobs?state=bogus").first, 400);
  auto list = HttpGet(port, "/api/v1/jobs?state=pending");
  EXPECT_EQ(list.first, 200);
  EXPECT_NE(list.second.find("\"id\":\"" + std::to_string(id) + "\""), std::string::npos) << list.second;
  auto metrics = HttpGet(port, "/metrics");
  EXPECT_EQ(metrics.first, 200);
  EXPECT_NE(metrics.second.find("phalanx_jobs{state=\"pending\"} 1"), std::string::npos) << metrics.second;
  // No agents: every node is down, its GPUs with it.
  EXPECT_NE(metrics.second.find("phalanx_gpus{state=\"down\"} 32"), std::string::npos) << metrics.second;
  EXPECT_NE(metrics.second.find("phalanx_nodes{state=\"down\"} 4"), std::string::npos) << metrics.second;
  EXPECT_NE(metrics.second.find("phalanx_queue_jobs{reason=\"Resources\"} 1"), std::string::npos) << metrics.second;
  EXPECT_NE(metrics.second.find("phalanx_submissions_total 1"), std::string::npos) << metrics.second;
  EXPECT_NE(metrics.second.find("phalanx_schedule_pass_seconds_count"), std::string::npos);
  EXPECT_EQ(HttpGet(port, "/api/v1/stats").first, 200);
  EXPECT_EQ(HttpGet(port, "/api/v1/fragmentation").first, 200);
  EXPECT_EQ(HttpGet(port, "/api/v1/nodes").first, 200);
  // The history sampler (every second here) writes through the committer; the API reads it back.
  std::string history;
  EXPECT_TRUE(WaitFor([&] {
    history = HttpGet(port, "/api/v1/history?series=gpus_down,queue_jobs.*").second;
    return history.find("\"gpus_down\":[[") != std::string::npos &&
           history.find("\"queue_jobs.Resources\":[[") != std::string::npos;
  })) << history;
  EXPECT_NE(history.find(",32]"), std::string::npos) << history;
  EXPECT_EQ(HttpGet(port, "/api/v1/history").first, 400);
}

}  // namespace
}  // namespace phalanx::service::testing
