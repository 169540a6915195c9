// The crash tests' rig (crash_rig.h).
#include "crash_rig.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace phalanx::crash_test {
namespace {

bool ProcStat(pid_t pid, char* state, uint64_t* start) {
  const std::string s = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = s.rfind(')');
  if (paren == std::string::npos || paren + 2 >= s.size()) return false;
  std::istringstream in(s.substr(paren + 2));
  std::string field;
  std::vector<std::string> f;
  while (in >> field) f.push_back(field);
  if (f.size() < 20) return false;
  *state = f[0][0];
  *start = std::strtoull(f[19].c_str(), nullptr, 10);  // field 22 overall
  return true;
}

}  // namespace

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Tail(const std::string& path, size_t bytes) {
  std::string s = ReadFile(path);
  return s.size() > bytes ? "..." + s.substr(s.size() - bytes) : s;
}

int FreeTcpPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    return 0;
  }
  close(fd);
  return ntohs(a.sin_port);
}

pid_t Spawn(const std::vector<std::string>& args, const std::string& log) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out < 0) return -1;
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(out, 1);
    dup2(out, 2);
    const int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, 0);
#ifdef SYS_close_range
    syscall(SYS_close_range, 3u, ~0u, 0u);
#endif
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out);
  return pid;
}

std::vector<JobProc> ScanJobs(const std::string& tag) {
  std::vector<JobProc> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::atoi(name.c_str()));
    const std::string comm = ReadFile("/proc/" + name + "/comm");
    if (comm != "sleep\n") continue;
    const std::string env = ReadFile("/proc/" + name + "/environ");
    if (env.find("CRASH_TAG=" + tag) == std::string::npos) continue;
    JobProc p;
    p.pid = pid;
    size_t pos = 0;
    while (pos < env.size()) {
      size_t end = env.find('\0', pos);
      if (end == std::string::npos) end = env.size();
      const std::string kv = env.substr(pos, end - pos);
      pos = end + 1;
      const size_t eq = kv.find('=');
      if (eq == std::string::npos) continue;
      const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
      if (k == "PHALANX_JOB_ID") p.job = std::strtoull(v.c_str(), nullptr, 10);
      else if (k == "PHALANX_LAUNCH_ID") p.launch = std::strtoull(v.c_str(), nullptr, 10);
      else if (k == "PHALANX_NODE") p.node = v;
      else if (k == "CUDA_VISIBLE_DEVICES") p.gpus = v;
    }
    if (!ProcStat(pid, &p.state, &p.start) || p.state == 'Z' || p.job == 0) continue;
    out.push_back(std::move(p));
  }
  return out;
}

bool StillSame(const JobProc& p) {
  char state = '?';
  uint64_t start = 0;
  return ProcStat(p.pid, &state, &start) && state != 'Z' && start == p.start;
}

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string x;
  while (std::getline(in, x, ',')) {
    if (!x.empty()) out.push_back(x);
  }
  return out;
}

// ---- the rig ---------------------------------------------------------------------------------

CrashRig::CrashRig() {
  std::string tmpl = "/tmp/phxcrash-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
  dir = tmpl;
  chmod(dir.c_str(), 0755);
  tag = std::filesystem::path(dir).filename().string();
  socket = dir + "/run/phalanxd.sock";
  db = dir + "/state/phalanxd.db";
  std::ofstream(dir + "/token") << "crash-test-token\n";
  chmod((dir + "/token").c_str(), 0600);
  std::ofstream(dir + "/phalanxd.yaml") << "agents:\n"
                                           "  heartbeat_interval: 1\n"
                                           "  heartbeat_timeout: 30\n"
                                           "  grace: 600\n"
                                           "  startup_grace: 600\n"
                                           "  kill_grace: 1\n"
                                           "scheduler:\n"
                                           "  order: fifo\n"  // small jobs run beside gangs: more concurrency
                                           "  pass_interval: 0.2\n";
  port = FreeTcpPort();
  if (const passwd* pw = getpwuid(getuid())) user = pw->pw_name;
}

CrashRig::~CrashRig() {
  if (daemon > 0) {
    kill(daemon, SIGKILL);
    waitpid(daemon, nullptr, 0);
  }
  for (pid_t& a : agents) {
    if (a > 0) {
      kill(a, SIGKILL);
      waitpid(a, nullptr, 0);
    }
  }
  for (const JobProc& p : ScanJobs(tag)) kill(p.pid, SIGKILL);
  if (getenv("PHALANX_CRASH_KEEP") == nullptr) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  } else {
    std::printf("kept %s\n", dir.c_str());
  }
}

void CrashRig::StartDaemon() {
  daemon = Spawn({PHALANXD, "--config", dir + "/phalanxd.yaml", "--socket", socket, "--db", db, "--topology",
                  "gen:demo", "--agent-listen", "127.0.0.1:" + std::to_string(port), "--token-file", dir + "/token",
                  "--log-level", "warn", "--admin", user},  // drain/resume need an admin (root always is one)
                 dir + "/phalanxd.log");
  ASSERT_GT(daemon, 0);
  std::ofstream(dir + "/phalanxd.log", std::ios::app) << "==== test: started phalanxd pid " << daemon << "\n";
}

void CrashRig::KillDaemon() {
  int status = 0;
  if (waitpid(daemon, &status, WNOHANG) == daemon) {
    ADD_FAILURE() << "phalanxd exited on its own (status " << status << "); log:\n" << Tail(dir + "/phalanxd.log");
  } else {
    kill(daemon, SIGKILL);
    waitpid(daemon, &status, 0);
  }
  daemon = -1;
}

void CrashRig::StartAgent(int n) {
  const std::string node = "node" + std::to_string(n);
  agents[n] = Spawn({AGENT,
                     "--daemon",
                     "127.0.0.1:" + std::to_string(port),
                     "--node",
                     node,
                     "--gpus",
                     std::to_string(kGpusPerNode),
                     "--token-file",
                     dir + "/token",
                     "--state-dir",
                     dir + "/agent-" + node,
                     "--allow-root-jobs",
                     "--nvml-library",
                     "none",
                     "--heartbeat",
                     "1",
                     "--kill-grace",
                     "1",
                     "--log-level",
                     "warn"},
                    dir + "/agent-" + node + ".log");
  ASSERT_GT(agents[n], 0);
}

void CrashRig::StopAgent(int n) {
  kill(agents[n], SIGTERM);
  waitpid(agents[n], nullptr, 0);
  agents[n] = -1;
}

std::shared_ptr<grpc::Channel> CrashRig::Channel() const {
  grpc::ChannelArguments args;
  // Reconnect quickly after a restart (the default backoff starts at 1 s).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 20);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 20);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // one connection per channel
  return grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(), args);
}

v1::JobSpec MakeSpec(const std::string& name, uint64_t slot, const std::string& tag, const std::string& dir,
                     std::mt19937_64& rng) {
  v1::JobSpec s;
  s.set_name(name);
  s.set_account("crash");
  const int r = static_cast<int>(rng() % 100);
  if (r < 5) {  // a 2-node gang
    s.set_nodes(2);
    s.set_gpus_per_node(8);
    s.set_gpus(16);
  } else {
    s.set_gpus(r < 55 ? 1 : r < 75 ? 2 : r < 90 ? 4 : 8);
  }
  s.set_walltime_s(120);
  static const char* kSleeps[] = {"0.2", "0.5", "1", "1"};
  s.add_command("/bin/sleep");
  s.add_command(kSleeps[rng() % 4]);
  s.set_working_dir(dir);
  s.set_stdout_pattern("/dev/null");
  (*s.mutable_env())["CRASH_TAG"] = tag;
  (*s.mutable_env())["CRASH_SLOT"] = std::to_string(slot);
  return s;
}

}  // namespace phalanx::crash_test
