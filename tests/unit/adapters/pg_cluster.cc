#include "pg_cluster.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "adapters/store/pg_db.h"

namespace phalanx::store::testing {
namespace {

std::unique_ptr<PgCluster>& Instance() {
  static std::unique_ptr<PgCluster> cluster;
  return cluster;
}

std::string FindBindir() {
  if (const char* env = std::getenv("PHALANX_PG_BINDIR")) return env;
  std::string best;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string bin = entry.path().string() + "/bin";
    if (std::filesystem::exists(bin + "/initdb") && bin > best) best = bin;
  }
  return best;
}

// Runs argv as `nobody` when root; returns the exit status (-1 if it could not run).
int RunAs(const std::vector<std::string>& argv, const std::string& log) {
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (geteuid() == 0) {
      const passwd* pw = getpwnam("nobody");
      if (pw == nullptr || setgroups(0, nullptr) != 0 || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) _exit(126);
    }
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string ReadFile(const std::string& path) {
  std::string out;
  if (FILE* f = std::fopen(path.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    std::fclose(f);
  }
  return out.size() > 2000 ? out.substr(out.size() - 2000) : out;
}

}  // namespace

PgCluster* PgCluster::Get(std::string* why) {
  auto& cluster = Instance();
  if (cluster) return cluster.get();
  static std::string failed;  // once: do not retry a cluster that could not start
  if (!failed.empty()) {
    *why = failed;
    return nullptr;
  }
  std::unique_ptr<PgCluster> c(new PgCluster());
  if (!c->Start(&failed)) {
    c->Stop();
    *why = failed;
    return nullptr;
  }
  cluster = std::move(c);
  std::atexit([] { Shutdown(); });
  return cluster.get();
}

void PgCluster::Shutdown() {
  if (auto& cluster = Instance()) {
    cluster->Stop();
    cluster.reset();
  }
}

bool PgCluster::Start(std::string* why) {
  bindir_ = FindBindir();
  if (bindir_.empty()) {
    *why = "no PostgreSQL server binaries (initdb) under /usr/lib/postgresql/*/bin or $PHALANX_PG_BINDIR";
    return false;
  }
  std::string tmpl = (std::filesystem::temp_directory_path() / "phalanx-pg-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    *why = "mkdtemp failed";
    return false;
  }
  dir_ = tmpl;
  if (geteuid() == 0) {
    const passwd* pw = getpwnam("nobody");
    if (pw == nullptr || chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
      *why = "cannot hand " + dir_ + " to the user nobody (PostgreSQL refuses to run as root)";
      return false;
    }
  }
  // The watchdog: stops the server and removes the directory once this process is gone.
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    *why = "pipe2 failed";
    return false;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    *why = "fork failed";
    return false;
  }
  if (pid == 0) {
    close(fds[1]);
    signal(SIGINT, SIG_IGN);  // a ^C of the test run reaches us too: outlive the parent
    char c;
    while (read(fds[0], &c, 1) > 0 || errno == EINTR) {
    }
    const std::string data = dir_ + "/data";
    if (std::filesystem::exists(data + "/postmaster.pid"))
      RunAs({bindir_ + "/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"}, dir_ + "/stop.log");
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    _exit(0);
  }
  close(fds[0]);
  watchdog_fd_ = fds[1];
  watchdog_pid_ = pid;

  const std::string data = dir_ + "/data", log = dir_ + "/initdb.log";
  if (RunAs({bindir_ + "/initdb", "-D", data, "-U", "phalanx", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"},
            log) != 0) {
    *why = "initdb failed: " + ReadFile(log);
    return false;
  }
  // No TCP; the socket lives in the directory. fsync off: the tests kill clients, never the
  // server, so what the server acknowledged is in its memory either way (the benchmark keeps fsync).
  const std::string opts = "-k " + dir_ + " -c listen_addresses= -c fsync=off -c full_page_writes=off";
  if (RunAs({bindir_ + "/pg_ctl", "-D", data, "-o", opts, "-l", dir_ + "/server.log", "-w", "-t", "60", "start"},
            dir_ + "/pg_ctl.log") != 0) {
    *why = "pg_ctl start failed: " + ReadFile(dir_ + "/pg_ctl.log") + ReadFile(dir_ + "/server.log");
    return false;
  }
  return true;
}

void PgCluster::Stop() {
  if (watchdog_fd_ >= 0) {
    close(watchdog_fd_);  // EOF: the watchdog stops the server and removes the directory
    watchdog_fd_ = -1;
  }
  if (watchdog_pid_ > 0) {
    int status = 0;
    waitpid(watchdog_pid_, &status, 0);
    watchdog_pid_ = -1;
  }
}

std::string PgCluster::AdminDsn() const { return "host=" + dir_ + " user=phalanx dbname=postgres"; }

std::string PgCluster::NewDsn() {
  const std::string schema = "t" + std::to_string(getpid()) + "_" + std::to_string(++schemas_);
  auto admin = PgDb::Connect(AdminDsn());
  if (!admin) return "invalid: " + admin.error().ToString();
  if (auto st = (*admin)->Exec("CREATE SCHEMA " + schema); !st) return "invalid: " + st.error().ToString();
  return AdminDsn() + " options='-c search_path=" + schema + "'";
}

}  // namespace phalanx::store::testing
