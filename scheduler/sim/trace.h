// Trace readers: the job lists the simulator replays. Pure: text in, jobs out; no file I/O.
//
// Two formats, told apart by the header line (ReadTrace sniffs):
//  * CSV, the format of the shared traces: `job_id,submit_s,gpus,duration_s[,user][,status]`.
//    Columns are found by name in the header, so extra or reordered columns are fine.
//  * Slurm `sacct --parsable2` output ('|'-separated), with the columns JobID, Submit, Start,
//    End (or Elapsed), AllocTRES or ReqTRES (gres/gpu=N or gres/gpu:TYPE=N), and optionally
//    User, State, Timelimit, found by name. Times are YYYY-MM-DDTHH:MM:SS (UTC assumed);
//    Elapsed/Timelimit are Slurm durations (util/duration.h: "0-05" is 5 hours) or UNLIMITED.
//    Job steps (123.batch, 123.0, 123.extern) are skipped, as are jobs without GPUs or that never
//    started/ended (counted).
// Jobs come out sorted by submit time (stable), with submit times relative to the earliest.
//
// Errors name `file:line` and the column: a malformed number or time, a wrong column count, a
// missing required column, a job with 0 GPUs or a negative duration, a duplicate job id.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "core/common/time.h"

namespace phalanx {

// The largest trace file `phalanx sim` reads: sacct --parsable2 rows are ~150 bytes, so this is
// over 3 million jobs (years of a large cluster); more fails before parsing ("larger than
// 512 MiB limit"), as does /dev/zero.
inline constexpr size_t kMaxTraceBytes = size_t{512} << 20;

struct TraceJob {
  std::string id;   // as in the trace
  Time submit = 0;  // seconds since the trace's first submit
  uint32_t gpus = 0;
  Duration duration = 0;   // run time it needs on `gpus` GPUs (replayed whatever its status)
  std::string user;        // "NA" when unknown
  std::string status;      // "NA", "COMPLETED", "FAILED", ... (upper case)
  Duration timelimit = 0;  // the walltime the user asked for (sacct Timelimit); 0: unknown
  int line = 0;            // 1-based line in the source
};

struct Trace {
  std::string source;  // file name given to the reader
  std::vector<TraceJob> jobs;
  size_t skipped_steps = 0;    // sacct: job steps (123.batch)
  size_t skipped_no_gpu = 0;   // sacct: jobs without a GPU request
  size_t skipped_not_run = 0;  // sacct: jobs that never started or have not ended
};

Result<Trace> ReadTraceCsv(std::string_view text, std::string_view filename);
Result<Trace> ReadSacct(std::string_view text, std::string_view filename);
// Picks the reader from the header line: '|' separated -> sacct, else CSV.
Result<Trace> ReadTrace(std::string_view text, std::string_view filename);

// Only the jobs submitted in [from, to), with submit times made relative to `from`.
Trace WindowTrace(Trace trace, Time from, Time to);
// Compresses arrivals: every submit time is divided by `factor` (> 0; 2 = twice the offered
// load), durations unchanged. The usual way to replay a trace at a higher load.
Trace ScaleArrivals(Trace trace, double factor);

// Failed/killed statuses (FAILED, CANCELLED..., TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, KILLED).
bool StatusIsFailure(std::string_view status);

// Parsing helpers, exposed for tests. Fail with a message naming the text.
Result<int64_t> ParseIsoTime(std::string_view text);  // YYYY-MM-DDTHH:MM:SS -> Unix seconds
// sacct's Elapsed/Timelimit: a Slurm duration (ParseSlurmDuration, util/duration.h), around
// spaces; a fraction of a second dropped; UNLIMITED, Partition_Limit, INVALID or empty -> 0.
Result<Duration> ParseSacctDuration(std::string_view text);

}  // namespace phalanx
