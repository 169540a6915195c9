// gsub: submit a job to phalanxd (sbatch's habits). See docs/user-guide.md.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client.h"
#include "job_table.h"
#include "submit_options.h"
#include "util/file_read.h"

extern char** environ;

namespace phalanx::cli {
namespace {

constexpr const char* kProgram = "gsub";

constexpr const char* kUsage =
    "usage: gsub [options] SCRIPT [ARGS...]\n"
    "       gsub [options] -- COMMAND [ARGS...]\n"
    "       gsub [options] --wrap \"COMMAND LINE\"\n"
    "\n"
    "Submit a job to phalanxd and print \"Submitted job N\". A SCRIPT's #PHX and #SBATCH lines at\n"
    "its top take the same options (#PHX over #SBATCH); options on the command line override both.\n"
    "An #SBATCH option gsub does not have is a warning, or an error where ignoring it would run\n"
    "the job wrongly.\n"
    "\n"
    "options:\n";

std::map<std::string, std::string> Environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq != std::string::npos && eq > 0) env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return env;
}

// A bounded read (util/file_read.h): `gsub /dev/zero` fails at the script limit, not out of memory.
Result<std::string> ReadFile(const std::string& path) {
  auto text = ReadFileBounded(path, kMaxScriptBytes);
  if (!text && text.error().message.starts_with("cannot open")) {
    return Fail(path, "cannot open the script (to run a command: gsub [options] -- COMMAND [ARGS...])");
  }
  return text;
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return {};
  return name;
}

BeginClock LocalClock() {
  BeginClock c;
  c.now = static_cast<int64_t>(std::time(nullptr));
  c.to_local = [](int64_t t) {
    const std::time_t tt = static_cast<std::time_t>(t);
    std::tm tm{};
    localtime_r(&tt, &tm);
    return tm;
  };
  c.from_local = [](std::tm tm) { return static_cast<int64_t>(std::mktime(&tm)); };
  return c;
}

bool Final(v1::JobState s) {
  return s == v1::JOB_STATE_COMPLETED || s == v1::JOB_STATE_FAILED || s == v1::JOB_STATE_CANCELLED ||
         s == v1::JOB_STATE_KILLED;
}

// -W/--wait: the job's end, through Watch (re-opened if the stream breaks; a Get between, so an
// end missed while it was down is seen). Exits as sbatch -W: the job's exit code; 1 when it
// failed without one, was cancelled or killed.
int WaitForEnd(Connection& conn, uint64_t id) {
  for (int attempt = 0;; ++attempt) {
    v1::Job job;
    {
      grpc::ClientContext context;
      conn.Prepare(context);
      v1::GetJobRequest get;
      get.set_job_id(id);
      if (const grpc::Status st = conn.jobs().Get(&context, get, &job); !st.ok()) {
        PrintError(kProgram, conn.DescribeJob(id, st));
        return kExitServer;
      }
    }
    if (!Final(job.state())) {
      grpc::ClientContext context;  // no deadline: the job may run for days
      v1::WatchRequest watch;
      watch.set_job_id(id);
      watch.set_send_initial(true);
      auto stream = conn.jobs().Watch(&context, watch);
      v1::JobEvent event;
      while (stream->Read(&event)) {
        if (event.job().id() == id && Final(event.job().state())) {
          job = event.job();
          context.TryCancel();
          break;
        }
      }
      (void)stream->Finish();
      if (!Final(job.state())) {
        std::this_thread::sleep_for(std::chrono::seconds(attempt < 5 ? 1 : 5));
        continue;
      }
    }
    if (job.exit_code() != 0) return job.exit_code() & 0xff;
    return job.state() == v1::JOB_STATE_COMPLETED ? kExitOk : kExitServer;
  }
}

// sbatch --test-only: sbatch's line on stderr, "gsub: Job N to start at T using G GPUs on nodes
// NODES in partition P" ("G GPUs" where sbatch counts "processors": GPUs are what Phalanx
// allocates), so that what parses sbatch's line parses this one; why not now is in --json
// (wait_reason). A job that never would: why, exit 1. Nothing is submitted.
int TestOnly(Connection& conn, v1::JobSpec spec, bool json) {
  v1::TestOnlyRequest request;
  *request.mutable_spec() = std::move(spec);
  v1::TestOnlyResponse response;
  grpc::ClientContext context;
  conn.Prepare(context);
  const grpc::Status status = conn.jobs().TestOnly(&context, request, &response);
  if (!status.ok()) {
    PrintError(kProgram, conn.Describe(status));
    return kExitServer;
  }
  if (json) {
    std::printf("%s\n", ToJson(response).c_str());
    return response.start_time() == 0 ? kExitServer : kExitOk;
  }
  const std::string job = "Job " + std::to_string(response.job_id());
  if (response.start_time() == 0) {
    PrintError(kProgram, job + " would never start: " +
                             (response.wait_reason().empty() ? "" : response.wait_reason() + ": ") + response.reason());
    return kExitServer;
  }
  std::string line = job + " to start at " + FormatTime(response.start_time()) + " using " +
                     std::to_string(response.gpus()) + " GPUs on nodes " + response.nodelist();
  if (!response.partition().empty()) line += " in partition " + response.partition();
  std::fprintf(stderr, "%s: %s\n", kProgram, line.c_str());
  return kExitOk;
}

int Run(const std::vector<std::string>& args) {
  auto command_line = ParseSubmitArgs(args);
  if (!command_line) {
    PrintError(kProgram, command_line.error().ToString());
    return kExitUsage;
  }
  if (command_line->Has("help")) {
    std::fputs(kUsage, stdout);
    std::fputs(OptionsHelp(SubmitOptionSpecs()).c_str(), stdout);
    return kExitOk;
  }
  const mode_t mask = umask(022);  // reading the umask means setting it: put it back at once
  umask(mask);
  SubmitContext ctx{CurrentDir(), Environment(), ReadFile, static_cast<uint32_t>(mask), HostName(), LocalClock()};
  auto plan = PlanSubmit(*command_line, ctx);
  if (!plan) {
    PrintError(kProgram, plan.error().ToString());
    return kExitUsage;
  }
  for (const std::string& w : plan->warnings) PrintError(kProgram, "warning: " + w);

  auto connection = Connect(kProgram, plan->server, plan->socket);
  if (!connection) return kExitUsage;
  Connection& conn = *connection;
  if (plan->test_only) return TestOnly(conn, std::move(plan->spec), plan->json);
  v1::SubmitRequest request;
  *request.mutable_spec() = std::move(plan->spec);
  v1::SubmitResponse response;
  grpc::ClientContext context;
  conn.Prepare(context);
  const grpc::Status status = conn.jobs().Submit(&context, request, &response);
  if (!status.ok()) {
    PrintError(kProgram, conn.Describe(status));
    return kExitServer;
  }
  if (plan->json) {
    std::printf("%s\n", ToJson(response).c_str());
  } else if (plan->parsable) {
    std::printf("%llu\n", static_cast<unsigned long long>(response.job_id()));
  } else {
    std::printf("Submitted job %llu\n", static_cast<unsigned long long>(response.job_id()));
  }
  if (plan->wait) {
    std::fflush(stdout);
    return WaitForEnd(conn, response.job_id());
  }
  return kExitOk;
}

}  // namespace
}  // namespace phalanx::cli

int main(int argc, char** argv) { return phalanx::cli::Run(std::vector<std::string>(argv + 1, argv + argc)); }
