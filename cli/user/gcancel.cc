// gcancel: cancel or signal jobs (scancel's habits). Every job is tried; the exit status is 1
// when any of them failed. See docs/user-guide.md.
#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "client.h"
#include "job_table.h"
#include "job_target.h"
#include "options.h"
#include "signal_names.h"
#include "util/json.h"
#include "util/strings.h"

namespace phalanx::cli {
namespace {

constexpr const char* kProgram = "gcancel";

constexpr OptionSpec kSpecs[] = {
    {"signal", 's', "SIG", "send SIG (USR1, SIGTERM, 10, ...) instead of stopping the job"},
    {"user", 'u', "USER", "all of USER's pending and running jobs"},
    {"me", 0, "", "all of your pending and running jobs"},
    {"states", 't', "STATE[,STATE...]", "only jobs in these states (PD, R, CK)"},
    {"state", 0, "STATE[,STATE...]", "the same as -t/--states (scancel's name)", "states"},
    {"name", 'n', "NAME", "only jobs with this name"},
    {"partition", 'p', "PART[,PART...]", "only jobs in these partitions"},
    {"json", 0, "", "print each job's CancelResponse or error as JSON"},
    {"socket", 0, "PATH", "phalanxd's socket (default $PHALANX_SOCKET, /run/phalanx/phalanxd.sock)"},
    {"server", 0, "HOST:PORT[,...]",
     "phalanxd over TCP, addresses tried in order (default $PHALANX_SERVER, /etc/phalanx/phalanx.conf)"},
    {"help", 'h', "", "this help"},
};

constexpr const char* kUsage =
    "usage: gcancel [options] ID... (ID: a job, an array, ARRAY_TASK or ARRAY_[TASKS])\n"
    "       gcancel [options] -u USER | --me | -t STATE | -n NAME | -p PART\n"
    "\n"
    "Cancel jobs (stop them: TERM, then KILL), or send them a signal with --signal.\n"
    "Filters (-t, -n, -p) pick among your jobs, or USER's with -u; given together, a job must match all.\n"
    "\n"
    "options:\n";

struct Outcome {
  std::string id;
  grpc::Status status;
  v1::CancelResponse response;
};

int Run(const std::vector<std::string>& args) {
  auto o = ParseCommand(kProgram, args, kSpecs, kUsage);
  if (!o) return o.error();
  std::vector<JobTarget> ids;  // jobs, arrays (every task), tasks: 1234, 1234_7, 1234_[1-3]
  for (const std::string& a : o->positional) {
    auto targets = ParseJobTargets(a);
    if (!targets) {
      PrintError(kProgram, targets.error().message);
      return kExitUsage;
    }
    ids.insert(ids.end(), targets->begin(), targets->end());
  }
  int signal = 0;
  if (const OptionValue* v = o->Find("signal")) {
    auto s = ParseSignal(v->value);
    if (!s) {
      PrintError(kProgram, v->Bad(s.error().message).ToString());
      return kExitUsage;
    }
    signal = *s;
  }
  std::set<v1::JobState> states;
  if (const OptionValue* v = o->Find("states")) {
    size_t start = 0;
    for (size_t i = 0; i <= v->value.size(); ++i) {
      if (i < v->value.size() && v->value[i] != ',') continue;
      auto s = ParseState(v->value.substr(start, i - start));
      if (!s) {
        PrintError(kProgram, v->Bad(s.error().message).ToString());
        return kExitUsage;
      }
      if (IsFinished(*s)) {
        PrintError(kProgram, v->Bad("'" + std::string(StateName(*s)) + "' jobs have already ended").ToString());
        return kExitUsage;
      }
      states.insert(*s);
      start = i + 1;
    }
  }
  const bool by_filter = o->Has("user") || o->Has("me") || o->Has("states") || o->Has("name") || o->Has("partition");
  if (ids.empty() && !by_filter) {
    PrintError(kProgram, "no job given: gcancel ID... or -u USER / --me / -t STATE / -n NAME / -p PART (see --help)");
    return kExitUsage;
  }
  if (!ids.empty() && by_filter) {
    PrintError(kProgram, "give job ids or filters (-u, --me, -t, -n, -p), not both");
    return kExitUsage;
  }
  std::set<std::string> partitions;
  if (const OptionValue* v = o->Find("partition")) {
    for (std::string_view p : SplitNonEmpty(v->value, ',')) partitions.emplace(p);
    if (partitions.empty()) {
      PrintError(kProgram, v->Bad("'' names no partition").ToString());
      return kExitUsage;
    }
  }

  auto connection = Connect(kProgram, o->Get("server"), o->Get("socket"));
  if (!connection) return kExitUsage;
  Connection& conn = *connection;
  if (by_filter) {
    v1::ListJobsRequest request;
    request.set_user(o->Has("user") ? o->Get("user") : CurrentUser());
    for (v1::JobState s : states) request.add_states(s);
    grpc::ClientContext context;
    conn.Prepare(context);
    v1::ListJobsResponse listed;
    const grpc::Status status = conn.jobs().List(&context, request, &listed);
    if (!status.ok()) {
      PrintError(kProgram, conn.Describe(status));
      return kExitServer;
    }
    // As scancel, a user who does not exist is an error (no passwd entry, no job in phalanxd).
    if (const OptionValue* v = o->Find("user"); v && !UserExists(v->value) &&
                                                std::none_of(listed.jobs().begin(), listed.jobs().end(),
                                                             [&](const v1::Job& j) { return j.user() == v->value; })) {
      PrintError(kProgram, v->Bad("unknown user '" + v->value + "'").ToString());
      return kExitUsage;
    }
    for (const v1::Job& job : listed.jobs()) {
      if (IsFinished(job.state()) || job.user() != request.user()) continue;
      if (!states.empty() && !states.contains(job.state())) continue;
      if (o->Has("name") && job.spec().name() != o->Get("name")) continue;
      if (!partitions.empty() && !partitions.contains(job.partition())) continue;
      ids.push_back({job.id(), std::nullopt});
    }
  }

  std::vector<Outcome> outcomes;
  int rc = kExitOk;
  for (const JobTarget& target : ids) {
    v1::CancelRequest request;
    request.set_job_id(target.id);
    if (target.task) request.set_array_task_id(*target.task);
    request.set_signal(signal);
    const uint64_t id = target.id;
    Outcome out{target.ToString(), {}, {}};
    grpc::ClientContext context;
    conn.Prepare(context);
    out.status = conn.jobs().Cancel(&context, request, &out.response);
    if (!out.status.ok()) {
      PrintError(kProgram, conn.DescribeJob(id, out.status));
      rc = kExitServer;
      if (out.status.error_code() == grpc::StatusCode::UNAVAILABLE) return rc;  // no daemon: no point going on
    }
    outcomes.push_back(std::move(out));
  }
  if (o->Has("json")) {
    std::string json = "{\"results\":[";
    for (size_t i = 0; i < outcomes.size(); ++i) {
      const Outcome& out = outcomes[i];
      json += std::string(i ? "," : "") + "{\"job_id\":\"" + out.id + "\",";
      if (out.status.ok()) {
        json += "\"response\":" + ToJson(out.response) + "}";
      } else {
        json += "\"error\":{\"code\":" + JsonQuote(CodeName(out.status.error_code())) +
                ",\"message\":" + JsonQuote(conn.Describe(out.status)) + "}}";
      }
    }
    std::printf("%s]}\n", json.c_str());
  }
  return rc;
}

}  // namespace
}  // namespace phalanx::cli

int main(int argc, char** argv) { return phalanx::cli::Run(std::vector<std::string>(argv + 1, argv + argc)); }
