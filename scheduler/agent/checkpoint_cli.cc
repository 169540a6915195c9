#include "agent/checkpoint_cli.h"

#include <cstdio>

#include "agent/checkpoint_file.h"
#include "util/flags.h"
#include "util/numbers.h"

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
  static constexpr FlagSpec kFlags[] = {{"epoch", "N", ""}, {"path", "P", ""}, {"help", "", ""}};
  auto flags = ParseFlags(args, kFlags, /*allow_positional=*/false);
  if (!flags) return Usage(flags.error().ToString());
  if (flags->Has("help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  CheckpointMark mark;
  if (flags->Has("epoch")) {
    auto epoch = ParseWholeNumber<uint64_t>("--epoch", flags->Get("epoch"));
    if (!epoch) return Usage(epoch.error().ToString());
    mark.epoch = *epoch;
  }
  mark.path = flags->Get("path");
  if (mark.path.find('\n') != std::string::npos) return Usage("--path must be one line");
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
