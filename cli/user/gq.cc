// gq: list jobs (squeue's habits). See docs/user-guide.md and job_table.h for the columns.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client.h"
#include "job_table.h"
#include "options.h"
#include "util/hostlist.h"
#include "util/strings.h"

namespace phalanx::cli {
namespace {

constexpr const char* kProgram = "gq";

constexpr OptionSpec kSpecs[] = {
    {"user", 'u', "USER[,USER...]", "only these users' jobs (a user unknown here and to phalanxd is an error)"},
    {"name", 'n', "NAME[,NAME...]", "only jobs with these names"},
    {"partition", 'p', "PART[,PART...]", "only jobs in these partitions"},
    {"nodelist", 'w', "HOSTLIST", "only jobs on these nodes (node[01-04],gpu7)"},
    {"start", 0, "", "pending jobs and their expected start (squeue --start)"},
    {"sort", 'S', "[-]F[,[-]F...]", "sort by these field letters, '-' descending (e.g. -t,p)"},
    {"Format", 'O', "NAME[:[.]WIDTH],...", "columns by squeue's long names (JobID,Name,UserName,State,...)"},
    {"iterate", 'i', "SECS", "print again every SECS seconds, until interrupted"},
    {"me", 0, "", "only your jobs"},
    {"states", 't', "STATE[,STATE...]", "only these states: PD, R, CK, CD, F, CA, KI (or full names, or all)"},
    {"jobs", 'j', "ID[,ID...]", "only these jobs (finished ones too)"},
    {"all", 'a', "", "include finished jobs the daemon still remembers"},
    {"long", 'l', "", "also account, class, priority, bus bandwidth and the GPUs of each job"},
    {"format", 'o', "FORMAT", "columns as %[.][WIDTH]LETTER fields (see below)"},
    {"noheader", 'h', "", "no header line (as squeue -h; help is --help)"},
    {"array", 'r', "", "one line per array task (pending tasks are otherwise shown as one: 1234_[8-99%8])"},
    {"json", 0, "", "print the ListJobsResponse as JSON"},
    {"socket", 0, "PATH", "phalanxd's socket (default $PHALANX_SOCKET, /run/phalanx/phalanxd.sock)"},
    {"server", 0, "HOST:PORT[,...]",
     "phalanxd over TCP, addresses tried in order (default $PHALANX_SERVER, /etc/phalanx/phalanx.conf)"},
    {"help", 0, "", "this help"},
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
    "  (GB/s), %P PARTITION, %Y PLACEMENT (GPUs; it was %P before partitions), %Z WORK_DIR,\n"
    "  %E DEPENDENCY, %p PRIORITY. \"%.8i\" right-justifies in 8 columns.\n"
    "default: \"%.i  %P  %j  %u  %T  %.G  %.D  %.M  %.L  %S  %R\"\n"
    "long names (-O): JobID Name UserName Account QOS Priority PriorityLong State StateCompact NumGPUs\n"
    "  NumNodes TimeUsed TimeLeft TimeLimit StartTime SubmitTime EndTime NodeList Reason ReasonList\n"
    "  Partition SchedNodes WorkDir Dependency BusBW (any case; NAME:WIDTH, NAME:.WIDTH right-justified)\n";

struct Query {
  std::set<std::string> users;
  std::set<std::string> names, partitions, nodes;
  bool start = false;
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
  if (const OptionValue* v = o.Find("name")) {
    for (const std::string_view n : SplitNonEmpty(v->value, ',')) q.names.emplace(n);
    if (q.names.empty()) return std::unexpected(v->Bad("'' names no job name"));
  }
  if (const OptionValue* v = o.Find("partition")) {
    for (const std::string_view p : SplitNonEmpty(v->value, ',')) q.partitions.emplace(p);
    if (q.partitions.empty()) return std::unexpected(v->Bad("'' names no partition"));
  }
  if (const OptionValue* v = o.Find("nodelist")) {
    auto nodes = ExpandHostlist(v->value, v->flag);
    if (!nodes) return std::unexpected(v->Bad(nodes.error().message));
    q.nodes.insert(nodes->begin(), nodes->end());
  }
  q.start = o.Has("start");
  if (q.start) q.states.insert(v1::JOB_STATE_PENDING);
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
  if (!q.names.empty() && !q.names.contains(job.spec().name())) return false;
  if (!q.partitions.empty() && !q.partitions.contains(job.partition())) return false;
  if (!q.nodes.empty() &&
      std::none_of(job.gpus().begin(), job.gpus().end(),
                   [&](const v1::GpuRef& g) { return q.nodes.contains(g.node()); }) &&
      std::none_of(job.slurm().nodes().begin(), job.slurm().nodes().end(),
                   [&](const v1::SlurmJobNode& n) { return q.nodes.contains(n.node()); }))
    return false;
  return true;
}

// One listing: asks the daemon and prints the table (or JSON). kExitServer when the daemon failed.
int ListOnce(const ParsedOptions& o, const Query& query, const std::vector<JobField>& format, Connection& conn) {
  v1::ListJobsResponse listed;
  int rc = kExitOk;
  if (!query.ids.empty()) {
    // Exactly these jobs, one Get each; an unknown job is an error, the others still print.
    for (uint64_t id : query.ids) {
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
      Query all_states = query;
      all_states.all = true;
      if (Wanted(all_states, job)) *listed.add_jobs() = std::move(job);
    }
  } else {
    v1::ListJobsRequest request;
    if (query.users.size() == 1) request.set_user(*query.users.begin());
    for (v1::JobState s : query.states) request.add_states(s);
    request.set_include_finished(query.all);
    grpc::ClientContext context;
    conn.Prepare(context);
    v1::ListJobsResponse response;
    const grpc::Status status = conn.jobs().List(&context, request, &response);
    if (!status.ok()) {
      PrintError(kProgram, conn.Describe(status));
      return kExitServer;
    }
    // As squeue, a user who does not exist is an error, not an empty list: one with no passwd
    // entry here and no job in phalanxd (a user of another machine may still have jobs).
    for (const std::string& u : query.users) {
      if (UserExists(u) ||
          std::any_of(response.jobs().begin(), response.jobs().end(), [&](const v1::Job& j) { return j.user() == u; }))
        continue;
      PrintError(kProgram, o.Find("user")->Bad("unknown user '" + u + "'").ToString());
      return kExitUsage;
    }
    // Slurm mode: Slurm's own jobs too (marked slurm:ID); a daemon without them answers none
    // (or UNIMPLEMENTED, an older one).
    if (query.states.empty() || query.states.contains(v1::JOB_STATE_PENDING) ||
        query.states.contains(v1::JOB_STATE_RUNNING)) {
      v1::SlurmJobListRequest slurm_request;
      slurm_request.set_user(request.user());
      grpc::ClientContext slurm_context;
      conn.Prepare(slurm_context);
      v1::ListJobsResponse slurm_jobs;
      const grpc::Status st = conn.jobs().ListSlurmJobs(&slurm_context, slurm_request, &slurm_jobs);
      if (!st.ok() && st.error_code() != grpc::StatusCode::UNIMPLEMENTED) {
        PrintError(kProgram, conn.Describe(st));
        return kExitServer;
      }
      for (v1::Job& job : *slurm_jobs.mutable_jobs()) *response.add_jobs() = std::move(job);
    }
    // The daemon filters too; filtering again keeps several users (-u a,b) and old daemons right.
    for (v1::Job& job : *response.mutable_jobs()) {
      if (Wanted(query, job)) *listed.add_jobs() = std::move(job);
    }
  }

  if (o.Has("json")) {
    std::printf("%s\n", ToJson(listed).c_str());
  } else {
    std::vector<v1::Job> jobs(listed.jobs().begin(), listed.jobs().end());
    if (query.ids.empty()) SortJobs(jobs);  // -j: in the order asked
    if (const OptionValue* v = o.Find("sort")) (void)SortJobsBy(jobs, v->value, std::time(nullptr));  // checked
    if (!o.Has("array")) CollapseArrayTasks(jobs);
    std::fputs(FormatJobTable(jobs, format, std::time(nullptr), !o.Has("noheader")).c_str(), stdout);
  }
  return rc;
}

int Run(const std::vector<std::string>& args) {
  auto o = ParseCommand(kProgram, args, kSpecs, kUsage, kFieldsHelp);
  if (!o) return o.error();
  if (!o->positional.empty()) {
    PrintError(kProgram, "unexpected argument '" + o->positional[0] + "' (job ids go in -j ID,ID)");
    return kExitUsage;
  }
  auto query = BuildQuery(*o);
  if (!query) {
    PrintError(kProgram, query.error().ToString());
    return kExitUsage;
  }
  std::string_view format_text = o->Has("long") ? kLongJobFormat : query->start ? kStartJobFormat : kDefaultJobFormat;
  std::string custom = o->Get("format");
  if (o->Has("format")) format_text = custom;
  if (const OptionValue* v = o->Find("Format")) {
    auto f = LongFormat(v->value);
    if (!f) {
      PrintError(kProgram, v->Bad(f.error().message).ToString());
      return kExitUsage;
    }
    custom = *f;
    format_text = custom;
  }
  int64_t iterate = 0;
  if (const OptionValue* v = o->Find("iterate")) {
    auto secs = ParseCount(v->value, 1, 86400);
    if (!secs) {
      PrintError(kProgram, v->Bad("'" + v->value + "' is not a number of seconds in 1..86400").ToString());
      return kExitUsage;
    }
    iterate = static_cast<int64_t>(*secs);
  }
  if (const OptionValue* v = o->Find("sort")) {
    std::vector<v1::Job> none;
    if (auto st = SortJobsBy(none, v->value, 0); !st) {
      PrintError(kProgram, v->Bad(st.error().message).ToString());
      return kExitUsage;
    }
  }
  auto format = ParseJobFormat(format_text);
  if (!format) {
    PrintError(kProgram, o->Find("format")->Bad(format.error().message).ToString());
    return kExitUsage;
  }

  auto connection = Connect(kProgram, o->Get("server"), o->Get("socket"));
  if (!connection) return kExitUsage;
  Connection& conn = *connection;
  while (true) {
    if (iterate > 0) {
      // As squeue -i: a time line before each listing.
      const std::time_t t = std::time(nullptr);
      char when[64];
      std::strftime(when, sizeof when, "%a %b %d %H:%M:%S %Y", std::localtime(&t));
      std::printf("%s\n", when);
    }
    const int rc = ListOnce(*o, *query, *format, conn);
    if (iterate == 0 || rc != kExitOk) return rc;
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::seconds(iterate));
  }
}

}  // namespace
}  // namespace phalanx::cli

int main(int argc, char** argv) { return phalanx::cli::Run(std::vector<std::string>(argv + 1, argv + argc)); }
