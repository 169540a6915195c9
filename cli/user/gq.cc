// gq: list jobs (squeue's habits). See docs/user-guide.md and job_table.h for the columns.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <set>
#include <string>
#include <vector>

#include "client.h"
#include "job_table.h"
#include "options.h"
#include "util/strings.h"

namespace phalanx::cli {
namespace {

constexpr const char* kProgram = "gq";

constexpr OptionSpec kSpecs[] = {
    {"user", 'u', "USER[,USER...]", "only these users' jobs"},
    {"me", 0, "", "only your jobs"},
    {"states", 't', "STATE[,STATE...]", "only these states: PD, R, CK, CD, F, CA, KI (or full names, or all)"},
    {"jobs", 'j', "ID[,ID...]", "only these jobs (finished ones too)"},
    {"all", 'a', "", "include finished jobs the daemon still remembers"},
    {"long", 'l', "", "also account, class, priority, bus bandwidth and the GPUs of each job"},
    {"format", 'o', "FORMAT", "columns as %[.][WIDTH]LETTER fields (see below)"},
    {"noheader", 0, "", "no header line"},
    {"array", 'r', "", "one line per array task (pending tasks are otherwise shown as one: 1234_[8-99%8])"},
    {"json", 0, "", "print the ListJobsResponse as JSON"},
    {"socket", 0, "PATH", "phalanxd's socket (default $PHALANX_SOCKET, /run/phalanx/phalanxd.sock)"},
    {"server", 0, "HOST:PORT[,...]",
     "phalanxd over TCP, addresses tried in order (default $PHALANX_SERVER, /etc/phalanx/phalanx.conf)"},
    {"help", 'h', "", "this help"},
};

constexpr const char* kUsage =
    "usage: gq [options]\n"
    "\n"
    "List pending and running jobs (with --all also finished ones), like squeue.\n"
    "\n"
    "options:\n";

constexpr const char* kFieldsHelp =
    "\n"
    "format fields (-o): %i JOBID, %j NAME, %u USER, %a ACCOUNT, %q CLASS, %Q PRIORITY, %T STATE,\n"
    "  %t ST, %G GPUS, %D NODES, %M TIME (run time), %L TIME_LEFT, %l TIME_LIMIT, %S START (predicted\n"
    "  for pending jobs), %V SUBMIT, %e END, %N NODELIST, %r REASON, %R NODELIST(REASON), %b BUSBW\n"
    "  (GB/s), %P PLACEMENT (GPUs), %Z WORK_DIR, %E DEPENDENCY. \"%.8i\" right-justifies in 8 columns.\n"
    "default: \"%.i  %j  %u  %T  %.G  %.D  %.M  %.L  %S  %R\"\n";

struct Query {
  std::set<std::string> users;
  std::set<v1::JobState> states;
  bool all_states = false;
  std::vector<uint64_t> ids;
  bool all = false;
};

Result<Query> BuildQuery(const ParsedOptions& o) {
  Query q;
  if (const OptionValue* v = o.Find("user")) {
    for (const std::string_view u : SplitNonEmpty(v->value, ',')) q.users.emplace(u);
    if (q.users.empty()) return std::unexpected(v->Bad("'' names no user"));
  }
  if (o.Has("me")) q.users.insert(CurrentUser());
  if (const OptionValue* v = o.Find("states")) {
    for (const std::string_view s : SplitNonEmpty(v->value, ',')) {
      if (s == "all" || s == "ALL") {
        q.all_states = true;
        continue;
      }
      auto state = ParseState(s);
      if (!state) return std::unexpected(v->Bad(state.error().message));
      q.states.insert(*state);
    }
    if (q.states.empty() && !q.all_states) return std::unexpected(v->Bad("'' names no state"));
  }
  if (const OptionValue* v = o.Find("jobs")) {
    for (const std::string_view s : SplitNonEmpty(v->value, ',')) {
      auto id = ParseCount(s, 1, UINT64_MAX);
      if (!id) return std::unexpected(v->Bad(Quote(s) + " is not a job id"));
      q.ids.push_back(*id);
    }
    if (q.ids.empty()) return std::unexpected(v->Bad("'' names no job"));
  }
  q.all = o.Has("all") || q.all_states ||
          std::any_of(q.states.begin(), q.states.end(), [](v1::JobState s) { return IsFinished(s); });
  return q;
}

bool Wanted(const Query& q, const v1::Job& job) {
  if (!q.users.empty() && !q.users.contains(job.user())) return false;
  if (!q.states.empty() && !q.states.contains(job.state())) return false;
  if (q.states.empty() && !q.all && IsFinished(job.state())) return false;
  return true;
}

int Run(const std::vector<std::string>& args) {
  auto o = ParseOptions(args, kSpecs, Positionals::kInterleaved);
  if (!o) {
    PrintError(kProgram, o.error().ToString());
    return kExitUsage;
  }
  if (o->Has("help")) {
    std::fputs(kUsage, stdout);
    std::fputs(OptionsHelp(kSpecs).c_str(), stdout);
    std::fputs(kFieldsHelp, stdout);
    return kExitOk;
  }
  if (!o->positional.empty()) {
    PrintError(kProgram, "unexpected argument '" + o->positional[0] + "' (job ids go in -j ID,ID)");
    return kExitUsage;
  }
  auto query = BuildQuery(*o);
  if (!query) {
    PrintError(kProgram, query.error().ToString());
    return kExitUsage;
  }
  std::string_view format_text = o->Has("long") ? kLongJobFormat : kDefaultJobFormat;
  const std::string custom = o->Get("format");
  if (o->Has("format")) format_text = custom;
  auto format = ParseJobFormat(format_text);
  if (!format) {
    PrintError(kProgram, o->Find("format")->Bad(format.error().message).ToString());
    return kExitUsage;
  }

  auto connection = Connect(kProgram, o->Get("server"), o->Get("socket"));
  if (!connection) return kExitUsage;
  Connection& conn = *connection;
  v1::ListJobsResponse listed;
  int rc = kExitOk;
  if (!query->ids.empty()) {
    // Exactly these jobs, one Get each; an unknown job is an error, the others still print.
    for (uint64_t id : query->ids) {
      v1::GetJobRequest request;
      request.set_job_id(id);
      v1::Job job;
      grpc::ClientContext context;
      conn.Prepare(context);
      const grpc::Status status = conn.jobs().Get(&context, request, &job);
      if (!status.ok()) {
        PrintError(kProgram, conn.DescribeJob(id, status));
        rc = kExitServer;
        if (status.error_code() == grpc::StatusCode::UNAVAILABLE) return rc;
        continue;
      }
      Query all_states = *query;
      all_states.all = true;
      if (Wanted(all_states, job)) *listed.add_jobs() = std::move(job);
    }
  } else {
    v1::ListJobsRequest request;
    if (query->users.size() == 1) request.set_user(*query->users.begin());
    for (v1::JobState s : query->states) request.add_states(s);
    request.set_include_finished(query->all);
    grpc::ClientContext context;
    conn.Prepare(context);
    v1::ListJobsResponse response;
    const grpc::Status status = conn.jobs().List(&context, request, &response);
    if (!status.ok()) {
      PrintError(kProgram, conn.Describe(status));
      return kExitServer;
    }
    // The daemon filters too; filtering again keeps several users (-u a,b) and old daemons right.
    for (v1::Job& job : *response.mutable_jobs()) {
      if (Wanted(*query, job)) *listed.add_jobs() = std::move(job);
    }
  }

  if (o->Has("json")) {
    std::printf("%s\n", ToJson(listed).c_str());
  } else {
    std::vector<v1::Job> jobs(listed.jobs().begin(), listed.jobs().end());
    if (query->ids.empty()) SortJobs(jobs);  // -j: in the order asked
    if (!o->Has("array")) CollapseArrayTasks(jobs);
    std::fputs(FormatJobTable(jobs, *format, std::time(nullptr), !o->Has("noheader")).c_str(), stdout);
  }
  return rc;
}

}  // namespace
}  // namespace phalanx::cli

int main(int argc, char** argv) { return phalanx::cli::Run(std::vector<std::string>(argv + 1, argv + argc)); }
