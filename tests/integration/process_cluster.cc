#include "process_cluster.h"

#include <dirent.h>
#include <fcntl.h>
#include <google/protobuf/struct.pb.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

extern char** environ;

namespace phalanx::integration {

namespace {
// The build's program, or $PHALANX_TEST_<NAME> (e.g. to run the cases against other builds).
std::string Bin(const char* env, const char* built) {
  const char* v = getenv(env);
  return v != nullptr && *v != '\0' ? v : built;
}
}  // namespace

const Binaries& Bins() {
  static const Binaries b{Bin("PHALANX_TEST_PHALANXD", PHALANXD_BIN), Bin("PHALANX_TEST_AGENT", AGENT_BIN),
                          Bin("PHALANX_TEST_GSUB", GSUB_BIN),         Bin("PHALANX_TEST_GQ", GQ_BIN),
                          Bin("PHALANX_TEST_GCANCEL", GCANCEL_BIN),   Bin("PHALANX_TEST_GINFO", GINFO_BIN)};
  return b;
}

bool WaitFor(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return cond();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::set<std::string> NodesOf(const v1::Job& job) {
  std::set<std::string> nodes;
  for (const auto& g : job.gpus()) nodes.insert(g.node());
  return nodes;
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::map<std::string, std::string> ParseEnv(const std::string& text) {
  std::map<std::string, std::string> env;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos && eq > 0) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

std::optional<pid_t> ReadPid(const std::string& path) {
  const std::string s = ReadFile(path);
  if (s.empty() || s.back() != '\n') return std::nullopt;
  try {
    const long v = std::stol(s);
    if (v > 0) return static_cast<pid_t>(v);
  } catch (...) {
  }
  return std::nullopt;
}

bool ProcessGone(pid_t pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  // Still there: a zombie counts as gone (its parent reaps it).
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

std::string RunResult::Describe() const {
  return "exit " + std::to_string(exit_code) + "\n--- stdout:\n" + out + "--- stderr:\n" + err;
}

namespace {

struct SpawnSpec {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // empty: environ
  std::string cwd;
  std::optional<uid_t> uid;
  std::optional<gid_t> gid;
  int stdout_fd = -1, stderr_fd = -1;
  bool die_with_parent = false;  // PR_SET_PDEATHSIG: a crashed test takes its daemon along
};

// fork + execve. Everything that allocates happens before fork (the test process has gRPC
// threads); the child only makes system calls.
pid_t Spawn(const SpawnSpec& s) {
  std::vector<char*> argv;
  for (const auto& a : s.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  if (!s.env.empty()) {
    for (const auto& e : s.env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
  }
  char* const* env = s.env.empty() ? environ : envp.data();
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) return pid;
  if (s.die_with_parent) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(125);
  }
  const int devnull = open("/dev/null", O_RDWR);
  dup2(devnull, 0);
  dup2(s.stdout_fd >= 0 ? s.stdout_fd : devnull, 1);
  dup2(s.stderr_fd >= 0 ? s.stderr_fd : devnull, 2);
  close_range(3, ~0U, 0);
  if (!s.cwd.empty() && chdir(s.cwd.c_str()) != 0) _exit(126);
  if (s.gid && (setgroups(0, nullptr) != 0 || setgid(*s.gid) != 0)) _exit(126);
  if (s.uid && setuid(*s.uid) != 0) _exit(126);
  execve(argv[0], argv.data(), env);
  _exit(127);
}

int WaitExit(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string Tail(const std::string& text, size_t lines) {
  size_t pos = text.size();
  for (size_t n = 0; pos > 0 && n <= lines; ++n) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) return text;
  }
  return text.substr(pos + 1);
}

}  // namespace

RunResult Run(const std::vector<std::string>& argv, const RunOptions& o) {
  RunResult r;
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    r.err = "pipe: " + std::string(strerror(errno));
    return r;
  }
  SpawnSpec s{argv, o.env, o.cwd, o.uid, o.gid, out[1], err[1], false};
  const pid_t pid = Spawn(s);
  close(out[1]);
  close(err[1]);
  const auto deadline = std::chrono::steady_clock::now() + o.timeout;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* bufs[2] = {&r.out, &r.err};
  int open_fds = 2;
  bool killed = false;
  while (open_fds > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0 && !killed) {
      kill(pid, SIGKILL);
      killed = true;
      r.err += "[killed after " + std::to_string(o.timeout.count()) + " s]\n";
    }
    if (poll(fds, 2, left > 0 ? static_cast<int>(std::min<long>(left, 1000)) : 1000) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        bufs[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  r.exit_code = WaitExit(pid);
  return r;
}

v1::ListNodesResponse NodesFromGinfoJson(const std::string& json) {
  google::protobuf::Struct root = FromJson<google::protobuf::Struct>(json);
  const auto it = root.fields().find("nodes");
  if (it == root.fields().end()) {
    ADD_FAILURE() << "no \"nodes\" in ginfo --json: " << json;
    return {};
  }
  std::string inner;
  (void)google::protobuf::util::MessageToJsonString(it->second, &inner);
  return FromJson<v1::ListNodesResponse>(inner);
}

// ---- ProcessCluster ----------------------------------------------------------------------------

ProcessCluster::ProcessCluster() : ProcessCluster(Options{}) {}

ProcessCluster::ProcessCluster(Options options) : options_(std::move(options)) {
  std::string tmpl = "/tmp/phx-integ-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp: " << strerror(errno);
    return;
  }
  dir_ = tmpl;
  chmod(dir_.c_str(), 0755);  // nobody reaches the socket and its own directories inside
  socket_ = File("run/phalanxd.sock");
  token_ = File("agent.token");
  config_path_ = File("phalanxd.yaml");
}

ProcessCluster::~ProcessCluster() {
  if (::testing::Test::HasFailure()) std::cerr << "---- cluster in " << dir_ << "\n" << Logs() << std::flush;
  Stop();
  std::error_code ec;
  if (!getenv("PHALANX_KEEP_TEST_DIR")) std::filesystem::remove_all(dir_, ec);
}

std::string ProcessCluster::MakeDir(const std::string& name, std::optional<uid_t> uid, std::optional<gid_t> gid) const {
  const std::string path = File(name);
  mkdir(path.c_str(), 0755);
  chmod(path.c_str(), 0755);
  if (uid || gid) {
    EXPECT_EQ(chown(path.c_str(), uid.value_or(-1), gid.value_or(-1)), 0) << path << ": " << strerror(errno);
  }
  return path;
}

int ProcessCluster::NodeIndex(const std::string& node) const {
  for (int i = 0; i < options_.nodes; ++i) {
    if (NodeName(i) == node) return i;
  }
  ADD_FAILURE() << "unknown node '" << node << "'";
  return 0;
}

void ProcessCluster::StartDaemon() {
  {
    std::ofstream t(token_);
    t << "integration-token-" << getpid() << "-" << dir_.substr(dir_.size() - 6) << "\n";
  }
  chmod(token_.c_str(), 0600);
  // Short heartbeats and grace periods so that failures are detected in about a second; no
  // minimum runtime before preemption (the classes' default is 600 s); elastic jobs grow after
  // one idle second.
  std::ofstream(config_path_) << "log_level: info\n"
                                 "agents:\n"
                                 "  heartbeat_interval: 1\n"
                                 "  startup_grace: 10\n"
                              << options_.agents_config
                              << "scheduler:\n"
                                 "  pass_interval: 0.1\n"
                                 "  grow_after_idle: 1\n"
                                 "  min_runtime_before_preemption: 0\n"
                                 "  checkpoint_grace: 60\n"
                                 "  default_walltime: 300\n"
                              << options_.scheduler_config << options_.config;
  daemon_.log = File("phalanxd.log");
  const int fd = open(daemon_.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << daemon_.log;
  SpawnSpec s;
  s.argv = {
      Bins().phalanxd, "--config", config_path_,     "--socket",    socket_,        "--db", File("state/phalanxd.db"),
      "--topology",    "gen:demo", "--agent-listen", "127.0.0.1:0", "--token-file", token_, "--http-listen",
      "127.0.0.1:0"};
  s.stdout_fd = s.stderr_fd = fd;
  s.die_with_parent = true;
  daemon_.pid = Spawn(s);
  close(fd);
  const std::regex agents_re(R"(agents: listening on \S+ \(port (\d+),)");
  const std::regex http_re(R"(http: listening on [0-9.]+:(\d+))");
  bool exited = false;
  ASSERT_TRUE(WaitFor([&] {
    int status = 0;
    if (waitpid(daemon_.pid, &status, WNOHANG) == daemon_.pid) {
      exited = true;
      daemon_.pid = -1;
      return true;
    }
    return ReadFile(daemon_.log).find("phalanxd ready") != std::string::npos;
  })) << "phalanxd not ready after 30 s:\n"
      << ReadFile(daemon_.log);
  ASSERT_FALSE(exited) << "phalanxd exited:\n" << ReadFile(daemon_.log);
  const std::string log = ReadFile(daemon_.log);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log, m, agents_re)) << log;
  agent_port_ = std::stoi(m[1]);
  ASSERT_TRUE(std::regex_search(log, m, http_re)) << log;
  http_port_ = std::stoi(m[1]);
  channel_ = grpc::CreateChannel("unix:" + socket_, grpc::InsecureChannelCredentials());
  jobs_ = v1::Jobs::NewStub(channel_);
  cluster_ = v1::Cluster::NewStub(channel_);
}

void ProcessCluster::StartAgent(int i) {
  Proc& a = agents_.at(i);
  a.log = File("agent-" + NodeName(i) + ".log");
  const int fd = open(a.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << a.log;
  SpawnSpec s;
  s.argv = {Bins().agent,
            "--daemon",
            "127.0.0.1:" + std::to_string(a.daemon_port > 0 ? a.daemon_port : agent_port_),
            "--node",
            NodeName(i),
            "--gpus",
            std::to_string(options_.gpus),
            "--token-file",
            token_,
            "--state-dir",
            File("agent-" + NodeName(i)),
            "--allow-root-jobs",
            "--nvml-library",
            "none",
            "--heartbeat",
            "1",
            "--kill-grace",
            "2"};
  s.argv.insert(s.argv.end(), options_.agent_args.begin(), options_.agent_args.end());
  s.stdout_fd = s.stderr_fd = fd;
  s.die_with_parent = true;
  a.pid = Spawn(s);
  close(fd);
}

void ProcessCluster::Start() {
  ASSERT_FALSE(dir_.empty());
  ASSERT_NO_FATAL_FAILURE(StartDaemon());
  agents_.resize(options_.nodes);
  for (int i = 0; i < options_.nodes; ++i) ASSERT_NO_FATAL_FAILURE(StartAgent(i));
  ASSERT_TRUE(WaitFor([&] {
    const auto nodes = Nodes();
    int up = 0;
    for (const auto& n : nodes) up += n.state() == v1::NODE_STATE_UP && n.agent_connected();
    return up == options_.nodes;
  })) << "not every node came up:\n"
      << Logs();
}

void ProcessCluster::SetAgentDaemonPort(int i, int port) { agents_.at(i).daemon_port = port; }

int ProcessCluster::StartProxy(int listen_port) {
  EXPECT_LE(proxy_.pid, 0) << "a proxy already runs";
  proxy_.log = File("proxy.log");
  const int fd = open(proxy_.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  EXPECT_GE(fd, 0) << proxy_.log;
  SpawnSpec s;
  s.argv = {"/usr/bin/env", "python3", TCP_PROXY, std::to_string(listen_port), std::to_string(agent_port_)};
  s.stdout_fd = s.stderr_fd = fd;
  s.die_with_parent = true;
  proxy_.pid = Spawn(s);
  close(fd);
  EXPECT_TRUE(WaitFor([&] { return ReadFile(proxy_.log).find("listening ") != std::string::npos; }, 10s))
      << "tcp_proxy.py did not start:\n"
      << ReadFile(proxy_.log);
  const std::string line = ReadFile(proxy_.log);
  const size_t at = line.find("listening ");
  return at == std::string::npos ? 0 : std::stoi(line.substr(at + 10));
}

void ProcessCluster::KillProxy() {
  if (proxy_.pid <= 0) return;
  kill(proxy_.pid, SIGKILL);
  WaitExit(proxy_.pid);
  proxy_.pid = -1;
}

void ProcessCluster::KillAgent(int i, int sig) {
  Proc& a = agents_.at(i);
  ASSERT_GT(a.pid, 0);
  ASSERT_EQ(kill(a.pid, sig), 0);
  if (sig == SIGKILL) {
    WaitExit(a.pid);
    a.pid = -1;
  }
}

void ProcessCluster::StopProcs(const std::vector<Proc*>& procs, std::chrono::milliseconds grace) {
  // SIGTERM to all first: they stop in parallel.
  for (Proc* p : procs) {
    if (p->pid > 0) kill(p->pid, SIGTERM);
  }
  for (Proc* p : procs) {
    if (p->pid <= 0) continue;
    int status = 0;
    const bool exited = WaitFor([&] { return waitpid(p->pid, &status, WNOHANG) == p->pid; }, grace);
    if (!exited) {
      ADD_FAILURE() << "pid " << p->pid << " (" << p->log << ") did not stop on SIGTERM";
      kill(p->pid, SIGKILL);
      WaitExit(p->pid);
    }
    p->pid = -1;
  }
}

void ProcessCluster::KillLeftoverJobs() {
  // Job processes carry PHALANX_CHECKPOINT_FILE=<our agent state dir>/...; they are our
  // descendants (through the agents' keepers). Anything still alive now is killed by pid.
  const std::string marker = "PHALANX_CHECKPOINT_FILE=" + dir_ + "/";
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return;
  std::vector<pid_t> found;
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    const long pid = strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0 || pid == getpid()) continue;
    std::ifstream in("/proc/" + std::string(e->d_name) + "/environ", std::ios::binary);
    std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (size_t pos = 0; pos < env.size();) {
      const size_t next = env.find('\0', pos);
      if (env.compare(pos, marker.size(), marker) == 0) {
        found.push_back(static_cast<pid_t>(pid));
        break;
      }
      if (next == std::string::npos) break;
      pos = next + 1;
    }
  }
  closedir(proc);
  for (pid_t pid : found) kill(pid, SIGKILL);
  if (!found.empty())
    WaitFor(
        [&] {
      for (pid_t pid : found) {
        if (!ProcessGone(pid)) return false;
      }
      return true;
        },
        5s);
}

void ProcessCluster::Stop() {
  if (stopped_ || dir_.empty()) return;
  stopped_ = true;
  // Cancel whatever is still pending or running, so that live agents stop their parts.
  if (daemon_.pid > 0 && jobs_) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    v1::ListJobsResponse resp;
    if (jobs_->List(&ctx, v1::ListJobsRequest(), &resp).ok()) {
      for (const auto& j : resp.jobs()) (void)Cancel(j.id());
    }
    // Parts stopped: the agents remove a part's record once its exit was reported.
    WaitFor(
        [&] {
      for (int i = 0; i < static_cast<int>(agents_.size()); ++i) {
        if (agents_[i].pid <= 0) continue;
        std::error_code ec;
        for (const auto& f : std::filesystem::directory_iterator(File("agent-" + NodeName(i) + "/parts"), ec)) {
          if (f.path().extension() == ".part") return false;
        }
      }
      return true;
        },
        10s);
  }
  std::vector<Proc*> agents;
  for (auto& a : agents_) agents.push_back(&a);
  StopProcs(agents, 10s);
  KillProxy();
  jobs_.reset();
  cluster_.reset();
  channel_.reset();
  StopProcs({&daemon_}, 15s);
  KillLeftoverJobs();
}

std::string ProcessCluster::Logs(size_t lines_each) const {
  std::string out = "---- phalanxd (" + daemon_.log + "):\n" + Tail(ReadFile(daemon_.log), lines_each);
  for (const auto& a : agents_) out += "---- " + a.log + ":\n" + Tail(ReadFile(a.log), lines_each);
  return out;
}

// ---- gRPC ----

uint64_t ProcessCluster::Submit(const v1::JobSpec& spec) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 30s);
  v1::SubmitRequest req;
  *req.mutable_spec() = spec;
  v1::SubmitResponse resp;
  const auto st = jobs_->Submit(&ctx, req, &resp);
  EXPECT_TRUE(st.ok()) << st.error_message();
  return st.ok() ? resp.job_id() : 0;
}

v1::Job ProcessCluster::Get(uint64_t id) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 30s);
  v1::GetJobRequest req;
  req.set_job_id(id);
  v1::Job job;
  const auto st = jobs_->Get(&ctx, req, &job);
  EXPECT_TRUE(st.ok()) << "Get " << id << ": " << st.error_message();
  return job;
}

::testing::AssertionResult ProcessCluster::WaitState(uint64_t id, v1::JobState state,
                                                     std::chrono::milliseconds timeout) {
  if (WaitFor([&] { return State(id) == state; }, timeout)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "job " << id << " not " << v1::JobState_Name(state) << " after "
                                       << timeout.count() << " ms: " << Get(id).ShortDebugString();
}

std::vector<v1::Node> ProcessCluster::Nodes() {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 30s);
  v1::ListNodesResponse resp;
  const auto st = cluster_->ListNodes(&ctx, v1::ListNodesRequest(), &resp);
  if (!st.ok()) return {};
  return {resp.nodes().begin(), resp.nodes().end()};
}

v1::Node ProcessCluster::Node(const std::string& name) {
  for (auto& n : Nodes()) {
    if (n.name() == name) return n;
  }
  return {};
}

grpc::Status ProcessCluster::Cancel(uint64_t id) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 30s);
  v1::CancelRequest req;
  req.set_job_id(id);
  v1::CancelResponse resp;
  return jobs_->Cancel(&ctx, req, &resp);
}

// ---- CLIs ----

RunResult ProcessCluster::Cli(const std::string& tool, const std::vector<std::string>& args, RunOptions options) {
  const Binaries& b = Bins();
  const std::string bin = tool == "gsub"      ? b.gsub
                          : tool == "gq"      ? b.gq
                          : tool == "gcancel" ? b.gcancel
                          : tool == "ginfo"   ? b.ginfo
                                              : "";
  if (bin.empty()) {
    ADD_FAILURE() << "no CLI " << tool;
    return {};
  }
  std::vector<std::string> argv{bin};
  argv.insert(argv.end(), args.begin(), args.end());
  if (options.env.empty()) {
    for (char** e = environ; *e != nullptr; ++e) {
      if (strncmp(*e, "PHALANX_SOCKET=", 15) != 0) options.env.emplace_back(*e);
    }
  }
  options.env.push_back("PHALANX_SOCKET=" + socket_);
  return Run(argv, options);
}

uint64_t ProcessCluster::Gsub(const std::vector<std::string>& args, const std::string& cwd, RunOptions options) {
  std::vector<std::string> a{"--parsable"};
  a.insert(a.end(), args.begin(), args.end());
  options.cwd = cwd;
  const RunResult r = Cli("gsub", a, options);
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  if (r.exit_code != 0) return 0;
  try {
    return std::stoull(r.out);
  } catch (...) {
    ADD_FAILURE() << "gsub --parsable printed '" << r.out << "'";
    return 0;
  }
}

}  // namespace phalanx::integration
