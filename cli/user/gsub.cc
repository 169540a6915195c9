// gsub: submit a job to phalanxd (sbatch's habits). See docs/user-guide.md.
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "client.h"
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
    "Submit a job to phalanxd and print \"Submitted job N\". A SCRIPT's #PHX lines at its top take\n"
    "the same options (like #SBATCH); options on the command line override them.\n"
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
  SubmitContext ctx{CurrentDir(), Environment(), ReadFile, static_cast<uint32_t>(mask)};
  auto plan = PlanSubmit(*command_line, ctx);
  if (!plan) {
    PrintError(kProgram, plan.error().ToString());
    return kExitUsage;
  }

  auto connection = Connect(kProgram, plan->server, plan->socket);
  if (!connection) return kExitUsage;
  Connection& conn = *connection;
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
  return kExitOk;
}

}  // namespace
}  // namespace phalanx::cli

int main(int argc, char** argv) { return phalanx::cli::Run(std::vector<std::string>(argv + 1, argv + argc)); }
