// gq's output: jobs as a table, with squeue's habits.
//
// A format is text with fields "%[.][WIDTH]LETTER" (squeue -o): "." right-justifies, WIDTH pads
// and truncates; a field without WIDTH is as wide as its widest value or its header. "%%" is a
// percent sign. Widths are terminal columns (util/printable.h DisplayWidth: CJK and emoji take
// two, combining marks none), so Unicode names keep the columns aligned; a value cut to its
// WIDTH ends in '+' (squeue cuts silently). Every cell is Printable: a control character in a
// name shows as \n, \x1b, ... and invalid UTF-8 as U+FFFD; --json output stays exact. Letters:
//   %i JOBID     %j NAME       %u USER       %a ACCOUNT    %q CLASS      %Q PRIORITY
//   %T STATE     %t ST         %G GPUS       %D NODES      %M TIME       %L TIME_LEFT
//   %l TIME_LIMIT %S START     %V SUBMIT     %e END        %N NODELIST   %r REASON
//   %R NODELIST(REASON)        %b BUSBW      %P PARTITION  %Y PLACEMENT  %Z WORK_DIR
//   %E DEPENDENCY %p PRIORITY (as %Q)
// (%P was PLACEMENT before partitions; squeue's %P is the partition, so PLACEMENT moved to %Y,
// squeue's "nodes the pending job is expected to use".)
// TIME is the run time (running jobs; 0:00 while pending); TIME_LEFT the walltime left (running)
// or the limit (pending); START the predicted start of a pending job (N/A when unknown) or the
// start of a running one, in local time (YYYY-MM-DDTHH:MM:SS). GPUS is MIN:MAX for a pending
// elastic job. NODELIST(REASON) is the hostlist of a job that holds GPUs, else its reason in
// parentheses: "(Resources)", "(Priority)", "(TopologyBlock: leaf)", "(ReservedFor job 12)".
// A job Slurm schedules itself (phalanxd's Slurm mode, Job.slurm set) reads "slurm:ID" in
// JOBID, Slurm's state in STATE (RUNNING, PENDING, COMPLETING, ...) and the time to Slurm's
// expected end in TIME_LEFT.
// Thread-safety: pure functions (times use the process's time zone, TZ).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "phalanx/v1/phalanx.pb.h"

namespace phalanx::cli {

inline constexpr std::string_view kDefaultJobFormat = "%.i  %P  %j  %u  %T  %.G  %.D  %.M  %.L  %S  %R";
inline constexpr std::string_view kLongJobFormat =
    "%.i  %P  %j  %u  %a  %q  %.Q  %T  %.G  %.D  %.M  %.L  %S  %.b  %R  %Y";
// squeue --start: pending jobs and when they are expected to start.
inline constexpr std::string_view kStartJobFormat = "%.i  %P  %j  %u  %t  %S  %.D  %Y  %R";

// squeue's -O/--Format: "JobID,Name:30,UserName:.10" (a name, then ":[.]WIDTH") as a format
// of %-fields; names are squeue's (case-insensitive). Fails naming an unknown field.
Result<std::string> LongFormat(std::string_view spec);

// squeue's -S: "-t,p" sorts by the %t field descending, then %p; letters as in formats.
// Fails naming an unknown letter. Stable: equal jobs keep the order they had.
Status SortJobsBy(std::vector<v1::Job>& jobs, std::string_view spec, int64_t now);

struct JobField {
  std::string literal;  // text before the field (or the whole item when letter == 0)
  char letter = 0;
  size_t width = 0;  // 0: as wide as needed
  bool right = false;
};

// Fails naming the offending "%X" (an unknown letter, a "%" at the end).
Result<std::vector<JobField>> ParseJobFormat(std::string_view format);

// The table: a header line (unless `header` is false), then one line per job; lines end in '\n'
// and carry no trailing blanks.
std::string FormatJobTable(const std::vector<v1::Job>& jobs, const std::vector<JobField>& format, int64_t now,
                           bool header = true);

// Pending tasks of one array collapse into one row, as squeue shows them: the first one's job
// with array_task_str set to the indices and the array's %N ("8-99%8"); %i then reads
// "1234_[8-99%8]" (a task alone: "1234_7"). The rows keep their order (the first task's place).
void CollapseArrayTasks(std::vector<v1::Job>& jobs);

// gq's order: running and checkpointing jobs by id, then pending jobs by priority (highest
// first; ties by id), then finished jobs by id.
void SortJobs(std::vector<v1::Job>& jobs);

// One field's value (the letter as above).
std::string JobFieldValue(const v1::Job& job, char letter, int64_t now);

// "PENDING", "RUNNING", ... and squeue's short forms "PD", "R", ...
std::string_view StateName(v1::JobState state);
std::string_view StateShort(v1::JobState state);
// A state by either name, any case ("pending", "PD", "r"). Fails quoting the text.
Result<v1::JobState> ParseState(std::string_view text);
bool IsFinished(v1::JobState state);

// "(Resources)", "(TopologyBlock: leaf)", "(ReservedFor job 12)", "(Held)", "(None)".
std::string ReasonText(std::string_view reason, std::string_view detail, bool held = false);

// Local time "2024-05-01T12:00:00"; "N/A" for 0.
std::string FormatTime(int64_t unix_seconds);

// GPUs grouped by node (first-seen order) with local index ranges, as the core's decision log
// writes them: "dgx01:0-7,dgx02:0-1+4-5". "-" when empty.
std::string FormatGpuRefs(const google::protobuf::RepeatedPtrField<v1::GpuRef>& gpus);

}  // namespace phalanx::cli
