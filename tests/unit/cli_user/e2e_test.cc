// End to end: the real gsub, gq, gcancel and ginfo executables, run as child processes against
// a fake phalanxd (Jobs + Cluster with canned data) listening on a Unix socket in this process.
// The fake records every request so the tests can check what the commands sent.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "client.h"
#include "phalanx/v1/phalanx.grpc.pb.h"

namespace phalanx::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

constexpr const char* kJobs = R"pb(
  jobs {
    id: 41
    user: "ada"
    state: JOB_STATE_RUNNING
    nodelist: "dgx[01-02]"
    spec { name: "llama" gpus: 16 }
    walltime_s: 7200
    gpus { node: "dgx01" index: 0 }
    gpus { node: "dgx02" index: 0 }
  }
  jobs {
    id: 43
    user: "ada"
    state: JOB_STATE_PENDING
    reason: "TopologyBlock"
    reason_detail: "leaf"
    spec { name: "moe" gpus: 32 nodes: 4 gpus_per_node: 8 }
    walltime_s: 3600
  }
  jobs {
    id: 44
    user: "bob"
    state: JOB_STATE_PENDING
    reason: "Priority"
    spec { name: "bert" gpus: 8 }
    walltime_s: 600
  }
  jobs {
    id: 7
    user: "ada"
    state: JOB_STATE_COMPLETED
    nodelist: "dgx03"
    start_time: 1
    end_time: 61
    spec { name: "done" gpus: 1 }
  }
)pb";

constexpr const char* kNodes = R"pb(
  nodes { name: "dgx01" state: NODE_STATE_UP gpus: 8 gpus_free: 0 agent_connected: true jobs: 41 }
  nodes { name: "dgx02" state: NODE_STATE_UP gpus: 8 gpus_free: 0 agent_connected: true jobs: 41 }
  nodes { name: "dgx03" state: NODE_STATE_UP gpus: 8 gpus_free: 8 agent_connected: true }
  nodes { name: "dgx04" state: NODE_STATE_DRAIN gpus: 8 gpus_free: 8 agent_connected: true reason: "fan" }
)pb";

constexpr const char* kFragmentation = R"pb(
  levels { level: "leaf" domains: 2 whole_free: 0 largest_free_block: 8 domain_gpus: 16 }
  levels { level: "node" domains: 4 whole_free: 1 largest_free_block: 8 domain_gpus: 8 }
  fgd: 0.25
)pb";

template <typename M>
M Parse(const char* text) {
  M m;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &m));
  return m;
}

// The fake daemon: canned jobs and nodes, every request recorded.
class FakeDaemon final : public v1::Jobs::Service, public v1::Cluster::Service {
 public:
  FakeDaemon() : jobs_(Parse<v1::ListJobsResponse>(kJobs)) {
    jobs_.mutable_jobs(0)->set_start_time(job41_start);  // job 41 has run 1:02:03, and counting
  }

  grpc::Status Submit(grpc::ServerContext*, const v1::SubmitRequest* request, v1::SubmitResponse* response) override {
    std::lock_guard lock(mu_);
    submits.push_back(*request);
    if (request->spec().gpus() > 1024) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "spec.gpus: 4096 GPUs exceed the cluster (1024)");
    }
    response->set_job_id(42);
    return grpc::Status::OK;
  }
  grpc::Status Cancel(grpc::ServerContext*, const v1::CancelRequest* request, v1::CancelResponse* response) override {
    std::lock_guard lock(mu_);
    cancels.push_back(*request);
    if (Find(request->job_id()) == nullptr) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "job " + std::to_string(request->job_id()) + " not found");
    }
    response->set_state(request->signal() == 0 ? v1::JOB_STATE_CANCELLED : v1::JOB_STATE_RUNNING);
    return grpc::Status::OK;
  }
  grpc::Status Get(grpc::ServerContext*, const v1::GetJobRequest* request, v1::Job* response) override {
    std::lock_guard lock(mu_);
    gets.push_back(*request);
    const v1::Job* job = Find(request->job_id());
    if (job == nullptr) return grpc::Status(grpc::StatusCode::NOT_FOUND, "not found");
    *response = *job;
    return grpc::Status::OK;
  }
  grpc::Status List(grpc::ServerContext*, const v1::ListJobsRequest* request, v1::ListJobsResponse* response) override {
    std::lock_guard lock(mu_);
    lists.push_back(*request);
    for (const v1::Job& job : jobs_.jobs()) {
      if (!request->user().empty() && job.user() != request->user()) continue;
      *response->add_jobs() = job;  // the commands filter states themselves too
    }
    return grpc::Status::OK;
  }
  grpc::Status ListNodes(grpc::ServerContext*, const v1::ListNodesRequest*, v1::ListNodesResponse* response) override {
    *response = Parse<v1::ListNodesResponse>(kNodes);
    return grpc::Status::OK;
  }
  grpc::Status ListPartitions(grpc::ServerContext*, const v1::PartitionListRequest*,
                              v1::PartitionListResponse* response) override {
    v1::Partition* p = response->add_partitions();
    p->set_name("gpu");
    p->set_state("UP");
    p->set_is_default(true);
    for (const char* n : {"dgx01", "dgx02", "dgx03", "dgx04"}) p->add_nodes(n);
    p->set_max_walltime_s(7200);
    return grpc::Status::OK;
  }
  grpc::Status GetFragmentation(grpc::ServerContext*, const v1::GetFragmentationRequest*,
                                v1::GetFragmentationResponse* response) override {
    *response = Parse<v1::GetFragmentationResponse>(kFragmentation);
    return grpc::Status::OK;
  }
  grpc::Status ExplainPending(grpc::ServerContext*, const v1::ExplainPendingRequest* request,
                              v1::ExplainPendingResponse* response) override {
    if (request->job_id() != 43) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "not pending");
    response->set_reason("TopologyBlock");
    response->set_detail("leaf");
    response->set_queue_position(2);
    v1::GpuRef* g = response->add_reserved_gpus();
    g->set_node("dgx03");
    g->set_index(0);
    return grpc::Status::OK;
  }

  // A job beyond the canned ones (e.g. with a name an older daemon accepted).
  void AddJob(const v1::Job& job) {
    std::lock_guard lock(mu_);
    *jobs_.add_jobs() = job;
  }

  const std::time_t job41_start = std::time(nullptr) - 3723;
  std::vector<v1::SubmitRequest> submits;
  std::vector<v1::CancelRequest> cancels;
  std::vector<v1::GetJobRequest> gets;
  std::vector<v1::ListJobsRequest> lists;

 private:
  const v1::Job* Find(uint64_t id) const {
    for (const v1::Job& j : jobs_.jobs()) {
      if (j.id() == id) return &j;
    }
    return nullptr;
  }

  std::mutex mu_;
  v1::ListJobsResponse jobs_;
};

struct Outcome {
  int rc = -1;
  std::string out, err;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class EndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("phx-cliuser-" + std::to_string(getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    socket_ = (dir_ / "d.sock").string();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + socket_, grpc::InsecureServerCredentials());
    builder.RegisterService(static_cast<v1::Jobs::Service*>(&daemon_));
    builder.RegisterService(static_cast<v1::Cluster::Service*>(&daemon_));
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr) << "cannot listen on unix:" << socket_;
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
    std::filesystem::remove_all(dir_);
  }

  // Runs a command in the test's directory with a small fixed environment; `socket` empty: none.
  Outcome Exec(const char* program, std::vector<std::string> args, std::string socket_env = "<default>") {
    if (socket_env == "<default>") socket_env = socket_;
    std::vector<std::string> env = {"PATH=/usr/bin:/bin", "TZ=UTC", "PHX_TEST_VAR=hello world", "HOME=/nonexistent"};
    if (!socket_env.empty()) env.push_back("PHALANX_SOCKET=" + socket_env);
    if (const char* asan = std::getenv("ASAN_OPTIONS")) env.push_back(std::string("ASAN_OPTIONS=") + asan);
    args.insert(args.begin(), program);
    std::vector<char*> argv, envp;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);

    const std::string out_path = (dir_ / "stdout").string(), err_path = (dir_ / "stderr").string();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addchdir_np(&actions, dir_.c_str());
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = 0;
    Outcome run;
    const int spawned = posix_spawn(&pid, program, &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) {
      ADD_FAILURE() << "cannot run " << program << ": " << std::strerror(spawned);
      return run;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    run.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    run.out = ReadAll(out_path);
    run.err = ReadAll(err_path);
    return run;
  }

  void Write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }

  FakeDaemon daemon_;
  std::unique_ptr<grpc::Server> server_;
  std::filesystem::path dir_;
  std::string socket_;
};

// ---- gsub --------------------------------------------------------------------------------------

TEST_F(EndToEnd, GsubScriptWithDirectives) {
  const std::string script =
      "#!/bin/bash\n"
      "#PHX -G 16 -t 2:00:00\n"
      "#PHX --topology leaf:prefer -J pretrain\n"
      "#PHX --checkpoint-signal USR2@120\n"
      "torchrun train.py \"$@\"\n";
  Write("train.sh", script);
  const Outcome r = Exec(GSUB_PATH, {"-G", "8", "--export", "NONE,FOO=bar,PHX_TEST_VAR", "train.sh", "--lr", "3e-4"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "Submitted job 42\n");
  EXPECT_EQ(r.err, "");
  ASSERT_EQ(daemon_.submits.size(), 1u);
  const v1::JobSpec& s = daemon_.submits[0].spec();
  EXPECT_EQ(s.gpus(), 8u);  // the command line beats "#PHX -G 16"
  EXPECT_EQ(s.walltime_s(), 7200);
  EXPECT_EQ(s.topology(), v1::TOPOLOGY_LEVEL_LEAF);
  EXPECT_TRUE(s.topology_prefer());
  EXPECT_EQ(s.name(), "pretrain");
  EXPECT_EQ(s.checkpoint_signal(), SIGUSR2);
  EXPECT_EQ(s.checkpoint_warning_s(), 120);
  EXPECT_EQ(s.script(), script);
  EXPECT_THAT(s.command(), ElementsAre("--lr", "3e-4"));
  EXPECT_THAT(s.env(), UnorderedElementsAre(Pair("FOO", "bar"), Pair("PHX_TEST_VAR", "hello world")));
  EXPECT_EQ(s.working_dir(), std::filesystem::canonical(dir_).string());
}

TEST_F(EndToEnd, GsubCommandExportsTheEnvironment) {
  const Outcome r = Exec(GSUB_PATH, {"--parsable", "-N", "2", "--gpus-per-node", "4", "-D", "/scratch", "--", "python3",
                                     "-c", "print(1)"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "42\n");
  ASSERT_EQ(daemon_.submits.size(), 1u);
  const v1::JobSpec& s = daemon_.submits[0].spec();
  EXPECT_EQ(s.gpus(), 8u);
  EXPECT_EQ(s.nodes(), 2u);
  EXPECT_EQ(s.gpus_per_node(), 4u);
  EXPECT_EQ(s.name(), "python3");
  EXPECT_TRUE(s.script().empty());
  EXPECT_THAT(s.command(), ElementsAre("python3", "-c", "print(1)"));
  EXPECT_EQ(s.working_dir(), "/scratch");
  EXPECT_EQ(s.env().at("PHX_TEST_VAR"), "hello world");  // --export ALL by default
  EXPECT_EQ(s.env().at("TZ"), "UTC");
}

TEST_F(EndToEnd, GsubJson) {
  const Outcome r = Exec(GSUB_PATH, {"--json", "--wrap", "hostname"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "{\"job_id\":\"42\"}\n");
  ASSERT_EQ(daemon_.submits.size(), 1u);
  EXPECT_EQ(daemon_.submits[0].spec().script(), "#!/bin/sh\nhostname\n");
}

TEST_F(EndToEnd, GsubServerRefusal) {
  const Outcome r = Exec(GSUB_PATH, {"-G", "4096", "--", "true"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "gsub: spec.gpus: 4096 GPUs exceed the cluster (1024)\n");
}

TEST_F(EndToEnd, GsubUsageErrorsSendNothing) {
  Write("bad.sh", "#!/bin/sh\n#PHX -G 8\n#PHX --checkpoint-signal USR9\necho\n");
  Outcome r = Exec(GSUB_PATH, {"bad.sh"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(
      r.err,
      "gsub: bad.sh:3: --checkpoint-signal: 'USR9': 'USR9' is not a signal (USR1, SIGUSR1, TERM, ... or a number)\n");
  r = Exec(GSUB_PATH, {"-G", "8", "-N", "3", "--", "true"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "gsub: -N: 8 GPUs (-G 8) do not divide over 3 nodes; give --gpus-per-node\n");
  r = Exec(GSUB_PATH, {"missing.sh"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err,
            "gsub: missing.sh: cannot open the script (to run a command: gsub [options] -- COMMAND [ARGS...])\n");
  EXPECT_TRUE(daemon_.submits.empty());
}

// ---- gq ----------------------------------------------------------------------------------------

TEST_F(EndToEnd, GqDefaultTable) {
  const std::time_t before = std::time(nullptr);
  const Outcome r = Exec(GQ_PATH, {});
  const std::time_t after = std::time(nullptr);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("JOBID  PARTITION  NAME   USER  STATE    GPUS  NODES"));
  // Job 41's TIME (H:MM:SS) is how long it had run when gq looked: 1:02:03 or more, as many
  // seconds more as passed between the fixture's start and gq's run.
  bool shown = false;
  for (long t = before - daemon_.job41_start; t <= after - daemon_.job41_start && !shown; ++t) {
    char text[32];
    std::snprintf(text, sizeof text, "%ld:%02ld:%02ld ", t / 3600, t / 60 % 60, t % 60);
    shown =
        r.out.find("\n   41  -          llama  ada   RUNNING     2      2  " + std::string(text)) != std::string::npos;
  }
  EXPECT_TRUE(shown) << r.out;
  EXPECT_THAT(r.out, HasSubstr("dgx[01-02]\n"));
  EXPECT_THAT(r.out, HasSubstr("   43  -          moe    ada   PENDING    32      4     0:00    1:00:00  N/A          "
                               "        (TopologyBlock: leaf)\n"));
  EXPECT_THAT(r.out, HasSubstr("(Priority)\n"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("done")));  // finished jobs only with --all
  ASSERT_EQ(daemon_.lists.size(), 1u);
  EXPECT_FALSE(daemon_.lists[0].include_finished());
  EXPECT_EQ(daemon_.lists[0].user(), "");
}

TEST_F(EndToEnd, GqFiltersAndFormat) {
  Outcome r = Exec(GQ_PATH, {"--me", "-t", "PD,CD", "-o", "%i %T %R", "--noheader"});
  EXPECT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(daemon_.lists.size(), 1u);
  EXPECT_EQ(daemon_.lists[0].user(), CurrentUser());
  EXPECT_THAT(daemon_.lists[0].states(), ElementsAre(v1::JOB_STATE_PENDING, v1::JOB_STATE_COMPLETED));
  EXPECT_TRUE(daemon_.lists[0].include_finished());

  r = Exec(GQ_PATH, {"-u", "ada", "-t", "PD,CD", "-o", "%i %T %R", "--noheader"});
  EXPECT_EQ(r.out, "43 PENDING   (TopologyBlock: leaf)\n7  COMPLETED dgx03\n");
}

TEST_F(EndToEnd, GqJobsByIdReportsUnknownOnes) {
  const Outcome r = Exec(GQ_PATH, {"-j", "41,99,7", "-o", "%i %j"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.out, "JOBID NAME\n41    llama\n7     done\n");
  EXPECT_EQ(r.err, "gq: job 99: not found\n");
  EXPECT_EQ(daemon_.gets.size(), 3u);
}

// Issue 12: names from before the daemon refused them (a store, a raw gRPC client): a NUL cut
// gq's output short and hid the jobs after it; ESC sequences reached the reader's terminal.
// The real gq shows them visibly, keeps Unicode names aligned, and --json stays exact.
TEST_F(EndToEnd, GqHostileAndUnicodeNamesGolden) {
  const std::vector<std::string> names = {std::string("a\0hidden", 8), "\x1b]0;owned\x07\x1b[2J", "训练-llama",
                                          "cafe\xcc\x81", "last"};
  for (size_t i = 0; i < names.size(); ++i) {
    v1::Job j;
    j.set_id(900 + i);
    j.set_user("eve");
    j.set_state(v1::JOB_STATE_PENDING);
    j.set_reason("Priority");
    j.mutable_spec()->set_name(names[i]);
    j.mutable_spec()->set_gpus(1 + i);
    daemon_.AddJob(j);
  }
  Outcome r = Exec(GQ_PATH, {"-u", "eve", "-o", "%.i  %j  %.G  %R"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out,
            "JOBID  NAME                     GPUS  NODELIST(REASON)\n"
            "  900  a\\x00hidden                 1  (Priority)\n"
            "  901  \\x1b]0;owned\\x07\\x1b[2J     2  (Priority)\n"
            "  902  训练-llama                  3  (Priority)\n"
            "  903  cafe\xcc\x81                        4  (Priority)\n"
            "  904  last                        5  (Priority)\n");
  r = Exec(GQ_PATH, {"-u", "eve", "--json"});
  EXPECT_EQ(r.rc, 0) << r.err;
  v1::ListJobsResponse parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &parsed).ok()) << r.out;
  ASSERT_EQ(parsed.jobs_size(), 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(parsed.jobs(i).spec().name(), names[i]);  // exact, byte for byte
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);                               // JSON-escaped, not raw
}

TEST_F(EndToEnd, GqJson) {
  const Outcome r = Exec(GQ_PATH, {"--json", "--all"});
  EXPECT_EQ(r.rc, 0) << r.err;
  v1::ListJobsResponse parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &parsed).ok()) << r.out;
  ASSERT_EQ(parsed.jobs_size(), 4);
  EXPECT_EQ(parsed.jobs(1).reason_detail(), "leaf");
  EXPECT_THAT(r.out, HasSubstr("\"id\":\"41\""));
  EXPECT_THAT(r.out, HasSubstr("\"state\":\"JOB_STATE_RUNNING\""));
}

// ---- gcancel -----------------------------------------------------------------------------------

TEST_F(EndToEnd, GcancelGoesOnAfterAnError) {
  const Outcome r = Exec(GCANCEL_PATH, {"41", "42", "43"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "gcancel: job 42: not found\n");
  ASSERT_EQ(daemon_.cancels.size(), 3u);
  EXPECT_EQ(daemon_.cancels[2].job_id(), 43u);
  EXPECT_EQ(daemon_.cancels[0].signal(), 0);
}

TEST_F(EndToEnd, GcancelSignalAndJson) {
  const Outcome r = Exec(GCANCEL_PATH, {"--signal", "SIGUSR1", "--json", "41"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "{\"results\":[{\"job_id\":\"41\",\"response\":{\"state\":\"JOB_STATE_RUNNING\"}}]}\n");
  ASSERT_EQ(daemon_.cancels.size(), 1u);
  EXPECT_EQ(daemon_.cancels[0].signal(), SIGUSR1);
}

TEST_F(EndToEnd, GcancelByUserAndState) {
  const Outcome r = Exec(GCANCEL_PATH, {"-u", "ada", "-t", "PD"});
  EXPECT_EQ(r.rc, 0) << r.err;
  ASSERT_EQ(daemon_.lists.size(), 1u);
  EXPECT_EQ(daemon_.lists[0].user(), "ada");
  EXPECT_THAT(daemon_.lists[0].states(), ElementsAre(v1::JOB_STATE_PENDING));
  ASSERT_EQ(daemon_.cancels.size(), 1u);
  EXPECT_EQ(daemon_.cancels[0].job_id(), 43u);
}

// ---- ginfo -------------------------------------------------------------------------------------

TEST_F(EndToEnd, Ginfo) {
  Outcome r = Exec(GINFO_PATH, {});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out,
            "PARTITION  AVAIL  TIMELIMIT  NODES  STATE  NODELIST\n"
            "gpu*       up       2:00:00      2  alloc  dgx[01-02]\n"
            "gpu*       up       2:00:00      1  drain  dgx04\n"
            "gpu*       up       2:00:00      1  idle   dgx03\n"
            "\n"
            "LEVEL  DOMAINS  WHOLE_FREE  LARGEST_FREE  DOMAIN_GPUS\n"
            "leaf         2           0             8           16\n"
            "node         4           1             8            8\n"
            "fragmentation (FGD): 0.250\n");
  r = Exec(GINFO_PATH, {"-N"});
  EXPECT_THAT(r.out, HasSubstr("dgx04  drain     8     8  -      -     -     fan\n"));
  r = Exec(GINFO_PATH, {"--json"});
  EXPECT_THAT(r.out, HasSubstr("{\"nodes\":{\"nodes\":[{\"name\":\"dgx01\""));
  EXPECT_THAT(r.out, HasSubstr(",\"fragmentation\":{\"levels\":[{\"level\":\"leaf\""));
}

TEST_F(EndToEnd, GinfoWhy) {
  Outcome r = Exec(GINFO_PATH, {"--why", "43"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out,
            "job 43: pending (TopologyBlock: leaf)\n"
            "  queue position:  2\n"
            "  predicted start: N/A\n"
            "  reserved GPUs:   dgx03:0\n");
  r = Exec(GINFO_PATH, {"--why", "41"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "ginfo: job 41: not pending\n");
  r = Exec(GINFO_PATH, {"--why", "x"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "ginfo: --why: 'x' is not a job id\n");
}

// ---- no daemon ---------------------------------------------------------------------------------

TEST_F(EndToEnd, NoDaemonIsAClearError) {
  const std::string gone = (dir_ / "gone.sock").string();
  for (const char* program : {GSUB_PATH, GQ_PATH, GCANCEL_PATH, GINFO_PATH}) {
    std::vector<std::string> args = {"--socket", gone};
    if (program == std::string(GSUB_PATH)) args.insert(args.end(), {"--wrap", "true"});
    if (program == std::string(GCANCEL_PATH)) args.push_back("5");
    const Outcome r = Exec(program, args);
    EXPECT_EQ(r.rc, 1) << program;
    const std::string name = std::filesystem::path(program).filename().string();
    EXPECT_THAT(r.err, HasSubstr(name + ": cannot reach phalanxd at unix:" + gone + ": ")) << program;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  // $PHALANX_SOCKET is used when there is no --socket.
  const Outcome r = Exec(GQ_PATH, {}, gone);
  EXPECT_THAT(r.err, HasSubstr("gq: cannot reach phalanxd at unix:" + gone));
  // --socket beats $PHALANX_SOCKET.
  EXPECT_EQ(Exec(GQ_PATH, {"--socket", socket_}, gone).rc, 0);
}

}  // namespace
}  // namespace phalanx::cli
