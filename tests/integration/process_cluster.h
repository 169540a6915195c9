// ProcessCluster: the real programs on loopback. phalanxd (a temporary directory with its Unix
// socket, SQLite file, token file and YAML configuration; agent listener and HTTP on free
// 127.0.0.1 ports) and one phalanx-agent process per node of gen:demo (fake GPUs, own state
// dirs, --allow-root-jobs since the tests run as root). Assertions go through a gRPC client of the
// generated stubs and through the user CLIs (gsub, gq, gcancel, ginfo) run as processes.
//
// Waiting is always for a condition with a deadline (WaitFor), never a fixed sleep. On a failed
// test the tails of every log are printed. Teardown cancels what still runs, stops the agents
// and the daemon with SIGTERM and kills any job process left over (found by its environment:
// PHALANX_CHECKPOINT_FILE lies in this cluster's directory).
// Thread-safety: one test thread.
#pragma once

#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "phalanx/v1/phalanx.grpc.pb.h"

namespace phalanx::integration {

namespace v1 = ::phalanx::v1;
using namespace std::chrono_literals;

// The programs under test (absolute paths, from the build).
struct Binaries {
  std::string phalanxd, agent, gsub, gq, gcancel, ginfo;
};
const Binaries& Bins();

// Polls `cond` every 20 ms until it holds or `timeout` passes; returns its last value.
bool WaitFor(const std::function<bool()>& cond, std::chrono::milliseconds timeout = 30s);

std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& text);
bool Exists(const std::string& path);

// `needle` occurs in `haystack`.
bool Contains(const std::string& haystack, const std::string& needle);

// The nodes a job's GPUs are on.
std::set<std::string> NodesOf(const v1::Job& job);
// "KEY=VALUE" lines (the output of `env`) as a map.
std::map<std::string, std::string> ParseEnv(const std::string& text);
// The number in a file such as "1234\n" (only once the line is complete), else nullopt.
std::optional<pid_t> ReadPid(const std::string& path);
// The process no longer exists (ESRCH), or is a zombie nobody reaped yet.
bool ProcessGone(pid_t pid);

struct RunOptions {
  std::string cwd;           // empty: the test's working directory
  std::optional<uid_t> uid;  // run as this user (setgroups(0) + setgid + setuid)
  std::optional<gid_t> gid;
  std::vector<std::string> env;        // the whole environment; empty: the test's own
  std::chrono::seconds timeout = 60s;  // killed after this
};
struct RunResult {
  int exit_code = -1;  // -1: killed by a signal or not started
  std::string out, err;
  std::string Describe() const;  // for failure messages
};
// Runs argv[0] (an absolute path) with argv, stdin from /dev/null, capturing stdout and stderr.
RunResult Run(const std::vector<std::string>& argv, const RunOptions& options = {});

// Protobuf JSON (what `--json` prints) into a message; a parse failure is a test failure.
template <class M>
M FromJson(const std::string& json) {
  M m;
  const auto st = google::protobuf::util::JsonStringToMessage(json, &m);
  EXPECT_TRUE(st.ok()) << st.ToString() << "\nin: " << json;
  return m;
}
// `ginfo -N --json` prints {"nodes": ListNodesResponse, "fragmentation": ...}.
v1::ListNodesResponse NodesFromGinfoJson(const std::string& json);

class ProcessCluster {
 public:
  struct Options {
    int nodes = 4;                        // node0..node{n-1} of gen:demo
    int gpus = 8;                         // --gpus of every agent
    std::string config;                   // YAML appended to the defaults below (a top-level section)
    std::string scheduler_config;         // lines appended to the scheduler: section ("  key: value\n")
    std::vector<std::string> agent_args;  // appended to every agent's command line
    // The agents: section after heartbeat_interval (1 s) and startup_grace (10 s). With these
    // the fence is off (3 + 1 - 2 - 15 s < 0; docs/agent.md "When the agent is cut off").
    std::string agents_config = "  heartbeat_timeout: 3\n  grace: 1\n  kill_grace: 2\n";
  };
  ProcessCluster();
  explicit ProcessCluster(Options options);
  ~ProcessCluster();
  ProcessCluster(const ProcessCluster&) = delete;
  ProcessCluster& operator=(const ProcessCluster&) = delete;

  // Starts the daemon and every agent and waits until every node is up with its agent
  // connected. Use as ASSERT_NO_FATAL_FAILURE(cluster.Start()).
  void Start();
  // Cancels active jobs, stops agents and daemon, kills leftover job processes. Idempotent.
  void Stop();

  const std::string& dir() const { return dir_; }
  std::string File(const std::string& name) const { return dir_ + "/" + name; }
  // A new directory inside the cluster's (mode 0755, or owned by uid/gid when given).
  std::string MakeDir(const std::string& name, std::optional<uid_t> uid = std::nullopt,
                      std::optional<gid_t> gid = std::nullopt) const;
  const std::string& socket() const { return socket_; }
  int agent_port() const { return agent_port_; }
  int http_port() const { return http_port_; }
  std::string NodeName(int i) const { return "node" + std::to_string(i); }
  int NodeIndex(const std::string& node) const;

  // Agents as processes: SIGKILL one, start it again (same state dir).
  pid_t agent_pid(int i) const { return agents_.at(i).pid; }
  void KillAgent(int i, int sig);
  void StartAgent(int i);
  // The next StartAgent(i) connects to 127.0.0.1:port instead of the daemon (0: the daemon).
  void SetAgentDaemonPort(int i, int port);

  // A TCP forwarder process to the daemon's agent port (tcp_proxy.py) on `listen_port` (0: a
  // free one); returns its port. KillProxy cuts every link through it (SIGKILL).
  int StartProxy(int listen_port = 0);
  void KillProxy();

  // ---- gRPC (root over the Unix socket) ----
  v1::Jobs::Stub& jobs() { return *jobs_; }
  v1::Cluster::Stub& cluster() { return *cluster_; }
  uint64_t Submit(const v1::JobSpec& spec);  // 0 (and a test failure) when refused
  v1::Job Get(uint64_t id);
  v1::JobState State(uint64_t id) { return Get(id).state(); }
  // Waits for `state`; on timeout the failure message shows the job.
  ::testing::AssertionResult WaitState(uint64_t id, v1::JobState state, std::chrono::milliseconds timeout = 30s);
  std::vector<v1::Node> Nodes();
  v1::Node Node(const std::string& name);
  grpc::Status Cancel(uint64_t id);

  // ---- the user CLIs, with PHALANX_SOCKET set (and --socket not needed) ----
  RunResult Cli(const std::string& tool, const std::vector<std::string>& args, RunOptions options = {});
  // gsub --parsable ARGS in `cwd`; the job id, 0 (and a test failure) when it failed.
  uint64_t Gsub(const std::vector<std::string>& args, const std::string& cwd, RunOptions options = {});

  // The tails of the daemon's and the agents' logs.
  std::string Logs(size_t lines_each = 40) const;

 private:
  struct Proc {
    pid_t pid = -1;
    std::string log;
    int daemon_port = 0;  // agents: 0: agent_port_
  };
  void StartDaemon();
  void StopProcs(const std::vector<Proc*>& procs, std::chrono::milliseconds grace);
  void KillLeftoverJobs();

  Options options_;
  std::string dir_, socket_, token_, config_path_;
  int agent_port_ = 0, http_port_ = 0;
  Proc daemon_;
  Proc proxy_;
  std::vector<Proc> agents_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Jobs::Stub> jobs_;
  std::unique_ptr<v1::Cluster::Stub> cluster_;
  bool stopped_ = false;
};

}  // namespace phalanx::integration
