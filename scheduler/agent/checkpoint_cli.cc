#include "agent/checkpoint_cli.h"

#include <charconv>
#include <cstdio>

#include "agent/checkpoint_file.h"

namespace phalanx::agent {
namespace {

constexpr const char* kUsage =
    "usage: phalanx-agent checkpoint-done [--epoch N] [--path P]\n"
    "\n"
    "Run inside a Phalanx job: report that a checkpoint is complete. Writes \"N P\" to\n"
    "$PHALANX_CHECKPOINT_FILE; the node agent reports it to the daemon.\n"
    "  --epoch N   the checkpoint's epoch (default: the next one)\n"
    "  --path P    where the checkpoint is (given back as PHALANX_CHECKPOINT_PATH on resume)\n";

int Usage(const std::string& message) {
  std::fprintf(stderr, "phalanx-agent checkpoint-done: %s\n%s", message.c_str(), kUsage);
  return 2;
}

}  // namespace

int RunCheckpointDone(std::span<const std::string> args, const char* checkpoint_file) {
  CheckpointMark mark;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string value;
    const size_t eq = flag.find('=');
    const bool inline_value = flag.starts_with("--") && eq != std::string::npos;
    if (inline_value) value = flag.substr(eq + 1), flag = flag.substr(0, eq);
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (flag != "--epoch" && flag != "--path") return Usage("unknown option '" + flag + "'");
    if (!inline_value) {
      if (i + 1 == args.size()) return Usage("option '" + flag + "' needs a value");
      value = args[++i];
    }
    if (flag == "--path") {
      if (value.find('\n') != std::string::npos) return Usage("--path must be one line");
      mark.path = value;
      continue;
    }
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), mark.epoch);
    if (ec != std::errc() || end != value.data() + value.size() || value.empty()) {
      return Usage("--epoch: '" + value + "' is not a whole number");
    }
  }
  if (checkpoint_file == nullptr || *checkpoint_file == '\0') {
    return Usage("PHALANX_CHECKPOINT_FILE is not set (run this inside a Phalanx job)");
  }
  if (auto s = WriteCheckpointFile(checkpoint_file, mark); !s) {
    std::fprintf(stderr, "phalanx-agent checkpoint-done: %s\n", s.error().ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace phalanx::agent
