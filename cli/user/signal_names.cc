#include "signal_names.h"

#include <algorithm>
#include <csignal>
#include <iterator>

#include "options.h"

namespace phalanx::cli {
namespace {

struct Named {
  std::string_view name;
  int number;
};

constexpr Named kSignals[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"ABRT", SIGABRT}, {"KILL", SIGKILL}, {"USR1", SIGUSR1},
    {"SEGV", SIGSEGV}, {"USR2", SIGUSR2}, {"PIPE", SIGPIPE}, {"ALRM", SIGALRM}, {"TERM", SIGTERM}, {"CONT", SIGCONT},
    {"STOP", SIGSTOP}, {"TSTP", SIGTSTP}, {"URG", SIGURG},   {"XCPU", SIGXCPU}, {"XFSZ", SIGXFSZ}, {"WINCH", SIGWINCH},
};

constexpr int kMaxSignal = 64;

}  // namespace

Result<int> ParseSignal(std::string_view text) {
  if (!text.empty() && text[0] >= '0' && text[0] <= '9') {
    auto n = ParseCount(text, 1, kMaxSignal);
    if (!n)
      return Fail("", "'" + std::string(text) + "' is not a signal number (1.." + std::to_string(kMaxSignal) + ")");
    return static_cast<int>(*n);
  }
  std::string upper;
  std::transform(text.begin(), text.end(), std::back_inserter(upper),
                 [](char c) { return static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c); });
  std::string_view name = upper;
  if (name.starts_with("SIG")) name.remove_prefix(3);
  for (const Named& s : kSignals) {
    if (s.name == name) return s.number;
  }
  return Fail("", "'" + std::string(text) + "' is not a signal (USR1, SIGUSR1, TERM, ... or a number)");
}

std::string SignalName(int signal) {
  for (const Named& s : kSignals) {
    if (s.number == signal) return std::string(s.name);
  }
  return std::to_string(signal);
}

}  // namespace phalanx::cli
