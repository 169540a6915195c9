// Helpers for the agent tests: scratch directories, file reads, waiting for a condition
// (instead of sleeping), and LaunchSpec builders for /bin/sh jobs.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "agent/launch_spec.h"

namespace phalanx::agent::testing {

// A fresh directory under /tmp, removed with everything in it at the end of the test.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/phalanx-agent-test-XXXXXX";
    path_ = mkdtemp(tmpl);
    chmod(path_.c_str(), 0755);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

inline void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Polls `done` every 5 ms until it holds or `timeout` passes; returns its last value.
inline bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// While it lives, whatever this process writes to stderr (the agent's log) goes to `path`, where
// Text() reads it back at any time; at the end it is copied to the real stderr for the test's
// output. For waiting on what the agent logged: its attempts and their failures.
class StderrCapture {
 public:
  explicit StderrCapture(std::string path) : path_(std::move(path)) {
    std::fflush(stderr);
    saved_ = dup(2);
    const int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    dup2(fd, 2);
    close(fd);
  }
  ~StderrCapture() {
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
    const std::string text = Text();
    std::fwrite(text.data(), 1, text.size(), stderr);
  }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  std::string Text() const { return ReadFile(path_); }
  // How many times `needle` was written so far.
  size_t Count(const std::string& needle) const {
    const std::string text = Text();
    size_t n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
    return n;
  }

 private:
  std::string path_;
  int saved_ = -1;
};

// "KEY=VALUE" lines (the output of `env`) as a map.
inline std::map<std::string, std::string> ParseEnv(const std::string& text) {
  std::map<std::string, std::string> env;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

// A part running `sh -c <command>` as the current user in `dir`.
inline LaunchSpec ShellJob(const std::string& command, const std::string& dir, JobId job = 7, LaunchId launch = 70) {
  LaunchSpec spec;
  spec.job_id = job;
  spec.launch_id = launch;
  spec.job_name = "test";
  spec.uid = getuid();
  spec.gid = getgid();
  spec.argv = {"/bin/sh", "-c", command};
  spec.working_dir = dir;
  spec.env = {{"PATH", "/usr/local/bin:/usr/bin:/bin"}};
  return spec;
}

// Waits (blocking) for a keeper we forked and returns the job's wait status from exit_file.
inline int WaitKeeper(pid_t keeper, const std::string& exit_file) {
  int status = 0;
  while (waitpid(keeper, &status, 0) < 0 && errno == EINTR) {
  }
  return std::atoi(ReadFile(exit_file).c_str());
}

}  // namespace phalanx::agent::testing
