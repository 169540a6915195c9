// phalanx job: hold, release, update and show jobs through phalanxd, as `scontrol hold`,
// `scontrol release`, `scontrol update job` and `scontrol show job` do for Slurm. The
// connection, socket discovery, error lines, durations and JSON are the users' client library's
// (cli/user: phalanx_client); this file is built only when that library is (PHALANX_HAVE_CLIENT).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "client.h"
#include "commands.h"
#include "duration.h"
#include "job_table.h"
#include "options.h"
#include "util/json.h"
#include "util/printable.h"

namespace phalanx::cli {
namespace {

constexpr const char* kJobProgram = "phalanx";

constexpr OptionSpec kSpecs[] = {
    {"time", 't', "DURATION", "update: the new walltime (gsub -t formats; users may only lower it)"},
    {"priority", 'p', "CLASS", "update: the new priority class (low, normal, high, urgent)"},
    {"name", 'J', "NAME", "update: the new name"},
    {"json", 0, "", "print the daemon's answers as JSON"},
    {"socket", 0, "PATH", "phalanxd's socket (default $PHALANX_SOCKET, /run/phalanx/phalanxd.sock)"},
    {"server", 0, "HOST:PORT[,...]",
     "phalanxd over TCP, addresses tried in order (default $PHALANX_SERVER, /etc/phalanx/phalanx.conf)"},
    {"help", 'h', "", "this help"},
};

constexpr const char* kJobUsage =
    "usage: phalanx job hold ID...\n"
    "       phalanx job release ID...\n"
    "       phalanx job update ID [--time DURATION] [--priority CLASS] [--name NAME]\n"
    "       phalanx job show ID|slurm:SLURMID...\n"
    "       phalanx job requeue ID...\n"
    "       phalanx job top ID...\n"
    "       phalanx job suspend|resume ID...\n"
    "\n"
    "Hold pending jobs (they wait until released), release them, change a job's walltime,\n"
    "priority class or name, or show what phalanxd knows about jobs (scontrol hold, release,\n"
    "update job, show job; in Slurm mode `show slurm:SLURMID` shows a Slurm job: the Phalanx job\n"
    "it is, or Slurm's own job as phalanxd last read it). The owner, root and phalanxd's admins may hold, release and "
    "update a\n"
    "job; users may only lower a walltime. Every job is tried; the exit status is 1 when any\n"
    "failed, 2 for a usage error.\n"
    "requeue (admins only): a running job is stopped and queued again, to resume from its last\n"
    "checkpoint. suspend/resume (admins only, as scontrol's): the running job's processes get\n"
    "SIGSTOP/SIGCONT; it shows SUSPENDED (S), keeps its GPUs, and its walltime is extended by the\n"
    "time it was suspended. top (scontrol top): the pending job goes first among its owner's\n"
    "pending jobs; other users' jobs keep their places. The owner may top their own jobs, admins\n"
    "anyone's.\n"
    "\n"
    "options:\n";

struct Outcome {
  uint64_t id = 0;
  grpc::Status status;
  v1::Job job;
};

// One line for a refused call: "job 42: no such job", "job 5: permission denied: hold job 5: ...".
std::string Explain(const Connection& conn, uint64_t id, const grpc::Status& status) {
  std::string line = conn.DescribeJob(id, status);
  if (status.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
    const std::string prefix = "job " + std::to_string(id) + ": ";
    if (line.starts_with(prefix)) line.insert(prefix.size(), "permission denied: ");
  }
  return line;
}

// `scontrol show job`'s layout: "Key=Value" pairs, the first line flush, the others indented.
// Every value a user chose is shown Printable (util/printable.h): no control character of
// theirs reaches the terminal or breaks the layout.
std::string ShowJob(const v1::Job& job, int64_t now) {
  const v1::JobSpec& s = job.spec();
  const auto field = [&](char letter) { return Printable(JobFieldValue(job, letter, now)); };
  std::string reason = job.reason().empty() ? "None" : job.reason();
  if (!job.reason_detail().empty()) reason += " (" + job.reason_detail() + ")";
  reason = Printable(reason);
  // Fields phalanxd cleared for this caller (private_data) show as "(hidden)", not as empty.
  const auto hidden = [&](std::string_view f) {
    return std::find(job.hidden_fields().begin(), job.hidden_fields().end(), f) != job.hidden_fields().end();
  };
  std::string command;
  if (!s.script().empty()) command = "(script)";
  for (const std::string& a : s.command()) command += (command.empty() ? "" : " ") + Printable(a);
  if (hidden("spec.command")) command = "(hidden)";
  const std::string user = hidden("user") ? "(hidden)" : Printable(job.user()) + "(" + std::to_string(job.uid()) + ")";
  const std::string group = hidden("gid") ? "(hidden)" : std::to_string(job.gid());
  std::string out =
      "JobId=" + field('i') + " JobName=" + (hidden("spec.name") ? "(hidden)" : Printable(s.name())) + "\n";
  out += "   UserId=" + user + " GroupId=" + group + " Account=" + field('a') + " Class=" + field('q') +
         " Priority=" + field('Q') + "\n";
  out += "   JobState=" + field('T') + " Reason=" + reason + " ExitCode=" + std::to_string(job.exit_code()) +
         " Held=" + (job.held() ? "yes" : "no") + "\n";
  out += "   SubmitTime=" + field('V') + " StartTime=" + field('S') + " EndTime=" + field('e') + "\n";
  out += "   RunTime=" + field('M') + " TimeLimit=" + field('l') + " TimeLeft=" + field('L') + "\n";
  out += "   NumGPUs=" + field('G') + " NumNodes=" + field('D') +
         " NodeList=" + (job.nodelist().empty() ? "(null)" : Printable(job.nodelist())) + " BusBW=" + field('b') + "\n";
  out += "   Partition=" + field('P') + " GPUs=" + field('Y') + "\n";
  out += "   Preemptions=" + std::to_string(job.preemptions()) + " Resizes=" + std::to_string(job.resizes()) +
         " CheckpointEpoch=" + std::to_string(job.checkpoint_epoch()) + " Dependency=" + field('E') + "\n";
  if (job.has_slurm()) {
    // Slurm schedules it (phalanxd's Slurm mode): Slurm's own view, GPUs per node.
    std::string gpus;
    for (const v1::SlurmJobNode& n : job.slurm().nodes())
      gpus += (gpus.empty() ? "" : ",") + Printable(n.node()) + ":" + std::to_string(n.gpus());
    out += "   ScheduledBy=Slurm SlurmJobId=" + std::to_string(job.slurm().job_id()) +
           " SlurmState=" + Printable(job.slurm().state()) + " NodeGPUs=" + (gpus.empty() ? "(null)" : gpus) + "\n";
    return out;
  }
  if (job.slurm_job_id() != 0) out += "   ScheduledBy=Phalanx SlurmJobId=" + std::to_string(job.slurm_job_id()) + "\n";
  out += "   Command=" + command + "\n";
  out += "   WorkDir=" + (hidden("spec.working_dir") ? std::string("(hidden)") : Printable(s.working_dir())) + "\n";
  return out;
}

std::string ResultsJson(const Connection& conn, const std::vector<Outcome>& outcomes) {
  std::string json = "{\"results\":[";
  for (size_t i = 0; i < outcomes.size(); ++i) {
    const Outcome& o = outcomes[i];
    json += std::string(i ? "," : "") + "{\"job_id\":\"" + std::to_string(o.id) + "\",";
    if (o.status.ok()) {
      json += "\"job\":" + ToJson(o.job) + "}";
    } else {
      json += "\"error\":{\"code\":" + JsonQuote(CodeName(o.status.error_code())) +
              ",\"message\":" + JsonQuote(conn.Describe(o.status)) + "}}";
    }
  }
  return json + "]}";
}

}  // namespace

int RunJob(std::span<const std::string> args) {
  if (args.empty()) {
    std::fputs(kJobUsage, stderr);
    return kExitUsage;
  }
  const std::string action = args[0];
  auto o = ParseOptions(args.subspan(1), kSpecs, Positionals::kInterleaved);
  if (!o) {
    PrintError(kJobProgram, "job " + action + ": " + o.error().ToString());
    return kExitUsage;
  }
  if (action == "--help" || action == "-h" || action == "help" || o->Has("help")) {
    std::fputs(kJobUsage, stdout);
    std::fputs(OptionsHelp(kSpecs).c_str(), stdout);
    return kExitOk;
  }
  if (action != "hold" && action != "release" && action != "update" && action != "show" && action != "requeue" &&
      action != "top" && action != "suspend" && action != "resume") {
    PrintError(kJobProgram,
               "job: unknown action '" + action +
                   "' (hold, release, update, show, requeue, top, suspend or resume; see phalanx job --help)");
    return kExitUsage;
  }
  std::vector<uint64_t> ids;
  std::set<size_t> slurm_ids;  // indices into ids naming Slurm job ids (show slurm:N)
  for (const std::string& a : o->positional) {
    const bool slurm = a.starts_with("slurm:");
    auto id =
        ParseCount(slurm ? std::string_view(a).substr(6) : std::string_view(a), 1, slurm ? UINT32_MAX : UINT64_MAX);
    if (slurm && action != "show") {
      PrintError(kJobProgram, "job " + action + ": '" + a + "': a Slurm job id is only for 'phalanx job show'");
      return kExitUsage;
    }
    if (slurm && id) slurm_ids.insert(ids.size());
    if (!id) {
      PrintError(kJobProgram, "job " + action + ": '" + a + "' is not a job id");
      return kExitUsage;
    }
    ids.push_back(*id);
  }
  if (ids.empty()) {
    PrintError(kJobProgram, "job " + action + ": no job given (phalanx job " + action + " ID...)");
    return kExitUsage;
  }
  v1::UpdateJobRequest update;
  if (action == "update") {
    if (ids.size() != 1) {
      PrintError(kJobProgram, "job update: one job at a time (got " + std::to_string(ids.size()) + ")");
      return kExitUsage;
    }
    if (const OptionValue* v = o->Find("time")) {
      auto seconds = ParseDuration(v->value);
      if (!seconds) {
        PrintError(kJobProgram, "job update: " + v->Bad(seconds.error().message).ToString());
        return kExitUsage;
      }
      update.set_walltime_s(*seconds);
    }
    if (o->Has("priority")) update.set_priority_class(o->Get("priority"));
    if (o->Has("name")) update.set_name(o->Get("name"));
    if (!update.has_walltime_s() && !update.has_priority_class() && !update.has_name()) {
      PrintError(kJobProgram, "job update: nothing to change: give --time, --priority or --name");
      return kExitUsage;
    }
  } else {
    for (const char* only_update : {"time", "priority", "name"}) {
      if (const OptionValue* v = o->Find(only_update)) {
        PrintError(kJobProgram, "job " + action + ": " + v->flag + " is an option of 'phalanx job update'");
        return kExitUsage;
      }
    }
  }

  auto connection = Connect(kJobProgram, o->Get("server"), o->Get("socket"));
  if (!connection) return kExitUsage;
  Connection& conn = *connection;
  std::vector<Outcome> outcomes;
  int rc = kExitOk;
  for (size_t k = 0; k < ids.size(); ++k) {
    const uint64_t id = ids[k];
    Outcome out;
    out.id = id;
    grpc::ClientContext context;
    conn.Prepare(context);
    v1::JobRef ref;
    ref.set_job_id(id);
    if (action == "hold") {
      out.status = conn.jobs().Hold(&context, ref, &out.job);
    } else if (action == "release") {
      out.status = conn.jobs().Release(&context, ref, &out.job);
    } else if (action == "update") {
      update.set_job_id(id);
      out.status = conn.jobs().Update(&context, update, &out.job);
    } else if (action == "requeue") {
      out.status = conn.jobs().Requeue(&context, ref, &out.job);
    } else if (action == "top") {
      out.status = conn.jobs().Top(&context, ref, &out.job);
    } else if (action == "suspend" || action == "resume") {
      v1::SuspendRequest suspend;
      suspend.set_job_id(id);
      suspend.set_resume(action == "resume");
      out.status = conn.jobs().Suspend(&context, suspend, &out.job);
    } else if (slurm_ids.contains(k)) {
      v1::SlurmJobRequest get;
      get.set_job_id(static_cast<uint32_t>(id));
      out.status = conn.jobs().GetSlurmJob(&context, get, &out.job);
    } else {
      v1::GetJobRequest get;
      get.set_job_id(id);
      out.status = conn.jobs().Get(&context, get, &out.job);
    }
    if (!out.status.ok()) {
      if (slurm_ids.contains(k)) {
        PrintError(kJobProgram, out.status.error_code() == grpc::StatusCode::UNIMPLEMENTED
                                    ? "slurm:" + std::to_string(id) + ": this phalanxd does not show Slurm jobs"
                                    : conn.Describe(out.status));
      } else {
        PrintError(kJobProgram, Explain(conn, id, out.status));
      }
      rc = kExitServer;
      if (out.status.error_code() == grpc::StatusCode::UNAVAILABLE) return rc;  // no daemon: no point going on
    }
    outcomes.push_back(std::move(out));
  }
  if (action == "show") {
    v1::ListJobsResponse shown;
    std::string text;
    for (const Outcome& out : outcomes) {
      if (!out.status.ok()) continue;
      *shown.add_jobs() = out.job;
      text += (text.empty() ? "" : "\n") + ShowJob(out.job, std::time(nullptr));
    }
    std::fputs(o->Has("json") ? (ToJson(shown) + "\n").c_str() : text.c_str(), stdout);
  } else if (o->Has("json")) {
    std::printf("%s\n", ResultsJson(conn, outcomes).c_str());
  }
  return rc;
}

}  // namespace phalanx::cli
