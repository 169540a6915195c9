// PrivateMunged: a munged of the test's own, on a fresh random key and a socket in a directory the
// test owns, stopped at the end. Shared by the tests that check MUNGE credentials for real (the
// step report server, users over TCP). Not thread-safe; one per test.
#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace phalanx::service::testing {

class PrivateMunged {
 public:
  // Starts munged with its key, socket, pid, log and seed files in `dir`.
  explicit PrivateMunged(const std::string& dir) : pid_file_(dir + "/munged.pid"), socket_(dir + "/munge.sock") {
    const std::string key = dir + "/munge.key";
    {
      std::ifstream random("/dev/urandom", std::ios::binary);
      std::string bytes(1024, '\0');
      random.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      std::ofstream(key, std::ios::binary) << bytes;
    }
    chmod(key.c_str(), 0600);
    const std::string cmd = "munged --force --key-file=" + key + " --socket=" + socket_ + " --pid-file=" + pid_file_ +
                            " --log-file=" + dir + "/munged.log --seed-file=" + dir + "/munged.seed";
    started_ = std::system(cmd.c_str()) == 0;  // munged forks into the background once its socket is up
  }
  ~PrivateMunged() { Stop(); }
  PrivateMunged(const PrivateMunged&) = delete;
  PrivateMunged& operator=(const PrivateMunged&) = delete;

  // Stops munged and waits (at most 5 s) until it has exited. Call it before the directory is
  // removed: munged outlives a test that does not stop it, and one still exiting removes its pid
  // and socket files while the test's remove_all walks the directory ("cannot remove all: No
  // such file or directory" in TearDown, seen under load).
  void Stop() {
    if (pid_file_.empty()) return;
    std::ifstream in(pid_file_);
    pid_t pid = 0;
    pid_file_.clear();
    if (!(in >> pid) || pid <= 0 || kill(pid, SIGTERM) != 0) return;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
      if (!Alive(pid)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  bool started() const { return started_; }
  const std::string& socket() const { return socket_; }

 private:
  // Running: it exists and is not a zombie (munged is not our child, so no waitpid; whoever
  // inherited it, PID 1 or a subreaper, may reap it late).
  static bool Alive(pid_t pid) {
    if (kill(pid, 0) != 0) return false;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    const size_t paren = line.rfind(')');
    return paren == std::string::npos || paren + 2 >= line.size() || line[paren + 2] != 'Z';
  }
  std::string pid_file_, socket_;
  bool started_ = false;
};

}  // namespace phalanx::service::testing
