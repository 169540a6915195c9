// The rules every submitted job spec must follow, whoever sends it: gsub checks them before it
// sends (with its flags' names), and phalanxd checks them again on every Submit over gRPC
// (proto/job_spec_check.h walks a v1::JobSpec through them), so a raw gRPC client gets no more
// than gsub allows. Each function fails with where = `field` and a message that quotes the
// value escaped (EscapeForLog; at most 80 bytes of it) and says what is allowed.
//
//   labels   name, account, class (CheckLabel): well-formed UTF-8, no control characters (C0,
//            DEL, C1) and no bidirectional overrides, at most kMaxLabelBytes; a class name is
//            [A-Za-z0-9_-]+ (CheckClassName).
//   paths    working_dir, stdout/stderr patterns (CheckPath): no control characters (a path
//            may hold any other byte), at most kMaxPathBytes.
//   args     each argument (CheckArgument): no NUL, at most kMaxArgumentBytes (Linux's
//            MAX_ARG_STRLEN); at most kMaxArguments of them.
//   env      names not empty, without '=' or control characters, at most kMaxLabelBytes
//            (CheckEnvName: not only identifiers, since bash exports functions as
//            BASH_FUNC_name%% and gsub's --export=ALL passes them on, as Slurm does); values
//            without NUL, at most kMaxArgumentBytes (CheckEnvValue); at most kMaxEnvVars.
//   script   not empty, no NUL, at most kMaxScriptBytes (CheckScript).
//   numbers  GPU counts (CheckGpuShape), elastic sizes (CheckElastic), durations (CheckSeconds),
//            signal numbers (CheckSignalNumber).
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/common/result.h"

namespace phalanx {

inline constexpr size_t kMaxLabelBytes = 256;
inline constexpr size_t kMaxPathBytes = 4096;        // PATH_MAX
inline constexpr size_t kMaxArgumentBytes = 131072;  // MAX_ARG_STRLEN
inline constexpr size_t kMaxArguments = 4096;
inline constexpr size_t kMaxEnvVars = 4096;
inline constexpr size_t kMaxScriptBytes = 1u << 20;     // well below gRPC's 4 MiB message limit
inline constexpr uint64_t kMaxJobGpus = 1u << 20;       // GPUs (and nodes) one job may ask for
inline constexpr int64_t kMaxJobSeconds = 365 * 86400;  // walltime, checkpoint interval, warning (as gsub's -t)
inline constexpr int kMaxSignalNumber = 64;             // SIGRTMAX on Linux

// `value` quoted for a message: 'text', escaped, cut to 80 bytes with "..." when longer.
std::string QuoteValue(std::string_view value);

Status CheckLabel(std::string_view field, std::string_view value, size_t max_bytes = kMaxLabelBytes);
Status CheckClassName(std::string_view field, std::string_view value);
Status CheckPath(std::string_view field, std::string_view value);
Status CheckArgument(std::string_view field, std::string_view value);
Status CheckEnvName(std::string_view field, std::string_view name);
Status CheckEnvValue(std::string_view field, std::string_view value);
Status CheckScript(std::string_view field, std::string_view text);

// gpus (total; the maximum of an elastic job), nodes x gpus_per_node: counts within
// 1..kMaxJobGpus, gpus_per_node exactly when nodes, gpus == nodes x gpus_per_node when both.
// `field` prefixes the names ("spec." -> "spec.gpus").
Status CheckGpuShape(std::string_view prefix, uint64_t gpus, uint64_t nodes, uint64_t gpus_per_node);

enum class ElasticStepRule : uint8_t { kAny, kMultiple, kPowerOfTwo };
// min_gpus <= gpus; a step kind other than kAny only for an elastic job (0 < min < max, no
// nodes); a multiple's step within 1..gpus; at least one legal size in [min, max].
Status CheckElastic(std::string_view prefix, uint64_t gpus, uint64_t min_gpus, uint64_t nodes, ElasticStepRule rule,
                    uint64_t step);

// 0..kMaxJobSeconds.
Status CheckSeconds(std::string_view field, int64_t seconds);
// 0 (the default) or 1..kMaxSignalNumber.
Status CheckSignalNumber(std::string_view field, int64_t signal);

}  // namespace phalanx
