// gsub's options and #PHX directives -> a phalanx.v1.JobSpec. Everything that can be checked
// without the daemon is checked here, and every error names the flag as written, its value and,
// for a directive, "script:line".
//
// How a submission reads (PlanSubmit):
//   gsub [options] -- COMMAND [ARGS...]   JobSpec.command = COMMAND ARGS
//   gsub [options] --wrap "CMD"           JobSpec.script = "#!/bin/sh\nCMD\n"
//   gsub [options] SCRIPT [ARGS...]       JobSpec.script = the script's text,
//                                         JobSpec.command = ARGS (the script's arguments; empty
//                                         when none, so a plain script sets only `script`)
// A script must not be empty, contain NUL bytes or exceed 1 MiB.
// A script's #PHX directives are read from its top until the first line that is neither blank
// nor a comment ('#...'); an option on the command line overrides the same option in a
// directive, and a later directive overrides an earlier one.
// Thread-safety: pure functions (files are read through the given callback).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/common/result.h"
#include "options.h"
#include "phalanx/v1/phalanx.pb.h"
#include "slurm_values.h"

namespace phalanx::cli {

// The largest script gsub reads or sends: well below gRPC's 4 MiB message limit.
inline constexpr size_t kMaxScriptBytes = size_t{1} << 20;

// What a submission sees of its process besides the arguments.
struct SubmitContext {
  std::string cwd;                                 // absolute
  std::map<std::string, std::string> environment;  // the submitter's environment
  // Reads a script; fails with a message naming the path.
  std::function<Result<std::string>(const std::string& path)> read_file;
  // The submitter's umask, sent as JobSpec.umask (the job's files get it); nullopt: not sent.
  std::optional<uint32_t> umask = {};
  std::string hostname = {};  // SLURM_SUBMIT_HOST; empty: not sent
  BeginClock clock = {};      // for --begin
};

struct SubmitPlan {
  v1::JobSpec spec;
  std::vector<std::string> warnings;  // "job.sh:3: #SBATCH --licenses=x: ignored: ..." for stderr
  bool parsable = false;
  bool json = false;
  bool wait = false;       // -W/--wait
  bool test_only = false;  // --test-only: ask phalanxd when it would start, submit nothing
  std::string socket;      // --socket (may come from a directive); empty: the default
  std::string server;      // --server (may come from a directive); empty: $PHALANX_SERVER, the file, the socket
};

// gsub's option table (also used for the help text).
std::span<const OptionSpec> SubmitOptionSpecs();

// The command line: options up to the script (or "--"); the rest is what to run.
Result<ParsedOptions> ParseSubmitArgs(std::span<const std::string> args);

// #PHX and #SBATCH directives at the top of `text` (until the first line that is neither blank
// nor a comment, as sbatch), #PHX taking precedence over #SBATCH whatever their order; errors
// are "script_name:LINE: ...". An #SBATCH option gsub does not have is a warning naming the
// line and the option (appended to `warnings`), or an error where ignoring it would run the
// job wrongly (kSbatchUnsupported in sbatch_compat.cc; docs/user-guide.md has the table).
Result<ParsedOptions> ParseDirectives(std::string_view text, std::string_view script_name,
                                      std::vector<std::string>* warnings = nullptr);

// The resource and run fields of a JobSpec from merged options (not command/script/name).
// Fails on a bad value, or on options that contradict each other (-N with a -G that does not
// divide, elastic -G with -N, --elastic-step without MIN:MAX, ...).
Result<v1::JobSpec> BuildJobSpec(const ParsedOptions& options, const SubmitContext& ctx);

// The whole submission: the command line, the script and its directives, the spec.
Result<SubmitPlan> PlanSubmit(const ParsedOptions& command_line, const SubmitContext& ctx);

// Pieces, exposed for tests.
struct GpuCount {
  uint32_t min = 0;  // < max: elastic; 0 (or == max): a fixed size
  uint32_t max = 0;
  std::string type = {};  // TYPE:N (sbatch's --gpus=a100:2): a constraint
};
Result<GpuCount> ParseGpus(const OptionValue& v);                                // N | MIN:MAX | TYPE:N
Result<std::pair<v1::TopologyLevel, bool>> ParseTopology(const OptionValue& v);  // level, prefer
Result<std::pair<int, int64_t>> ParseCheckpointSignal(const OptionValue& v);     // signal, seconds
Result<std::string> ParseDependency(const OptionValue& v);                       // Slurm's forms -> canonical text
Result<std::map<std::string, std::string>> ParseExport(const OptionValue& v,
                                                       const std::map<std::string, std::string>& environment);

}  // namespace phalanx::cli
