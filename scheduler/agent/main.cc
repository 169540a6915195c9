// phalanx-agent: the Phalanx node agent (docs/agent.md). This file only parses the command
// line, runs the Agent until SIGTERM/SIGINT, and dispatches `checkpoint-done`.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/agent_flags.h"
#include "agent/checkpoint_cli.h"
#include "util/log.h"

int main(int argc, char** argv) {
  using namespace phalanx;
  using namespace phalanx::agent;
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "checkpoint-done") {
    return RunCheckpointDone(std::span(args).subspan(1), std::getenv("PHALANX_CHECKPOINT_FILE"));
  }
  auto flags = ParseAgentFlags(args);
  if (!flags) {
    std::fprintf(stderr, "phalanx-agent: %s\n(see phalanx-agent --help)\n", flags.error().ToString().c_str());
    return 2;
  }
  if (flags->help) {
    std::fputs(kAgentUsage, stdout);
    return 0;
  }
  SetLogLevel(flags->log_level);
  // fds 0-2 must exist: otherwise pipes and files could land there and be clobbered by the
  // dup2 onto a job's stdio.
  int fd = -1;
  while ((fd = open("/dev/null", O_RDWR)) >= 0 && fd <= 2) {
  }
  if (fd > 2) close(fd);
  flags->options.version = std::string("phalanx-agent ") + PHALANX_VERSION;

  // Before any thread exists: SIGPIPE ignored, the stop signals blocked everywhere and taken
  // by sigwait below. (Job parts get default dispositions and an empty mask.)
  std::signal(SIGPIPE, SIG_IGN);
  sigset_t stop;
  sigemptyset(&stop);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stop, sig);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  auto agent = Agent::Create(std::move(flags->options));
  if (!agent) {
    std::fprintf(stderr, "phalanx-agent: %s\n", agent.error().ToString().c_str());
    return 1;
  }
  (*agent)->Start();
  int sig = 0;
  sigwait(&stop, &sig);
  Log(LogLevel::kInfo, "stopping on " + std::string(sigabbrev_np(sig)) + "; job parts keep running");
  (*agent)->Stop();
  return 0;
}
