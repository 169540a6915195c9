// ginfo: the cluster's nodes and free blocks (sinfo's habits), or why a job waits (--why).
// See docs/user-guide.md.
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "client.h"
#include "node_table.h"
#include "options.h"

namespace phalanx::cli {
namespace {

constexpr const char* kProgram = "ginfo";

constexpr OptionSpec kSpecs[] = {
    {"nodes", 'N', "", "one line per node"},
    {"why", 0, "ID", "why job ID is pending: reason, queue position, predicted start, reserved GPUs"},
    {"json", 0, "", "print the responses as JSON"},
    {"socket", 0, "PATH", "phalanxd's socket (default $PHALANX_SOCKET, /run/phalanx/phalanxd.sock)"},
    {"server", 0, "HOST:PORT[,...]",
     "phalanxd over TCP, addresses tried in order (default $PHALANX_SERVER, /etc/phalanx/phalanx.conf)"},
    {"help", 'h', "", "this help"},
};

constexpr const char* kUsage =
    "usage: ginfo [-N] [--json]\n"
    "       ginfo --why ID [--json]\n"
    "\n"
    "Nodes grouped by state (idle, mix, alloc, drng, drain, down; * = agent not connected) with\n"
    "their GPUs, then the free blocks per topology level: how many domains of the level are\n"
    "entirely free and the largest free block inside one of them.\n"
    "\n"
    "options:\n";

int Why(Connection& conn, const OptionValue& v, bool json) {
  auto id = ParseCount(v.value, 1, UINT64_MAX);
  if (!id) {
    PrintError(kProgram, v.Bad("'" + v.value + "' is not a job id").ToString());
    return kExitUsage;
  }
  v1::ExplainPendingRequest request;
  request.set_job_id(*id);
  v1::ExplainPendingResponse response;
  grpc::ClientContext context;
  conn.Prepare(context);
  const grpc::Status status = conn.cluster().ExplainPending(&context, request, &response);
  if (!status.ok()) {
    PrintError(kProgram, conn.DescribeJob(*id, status));
    return kExitServer;
  }
  if (json) {
    std::printf("%s\n", ToJson(response).c_str());
  } else {
    std::fputs(FormatExplain(*id, response, std::time(nullptr)).c_str(), stdout);
  }
  return kExitOk;
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
    return kExitOk;
  }
  if (!o->positional.empty()) {
    PrintError(kProgram, "unexpected argument '" + o->positional[0] + "' (see --help)");
    return kExitUsage;
  }
  auto connection = Connect(kProgram, o->Get("server"), o->Get("socket"));
  if (!connection) return kExitUsage;
  Connection& conn = *connection;
  if (const OptionValue* why = o->Find("why")) return Why(conn, *why, o->Has("json"));

  v1::ListNodesResponse nodes;
  {
    grpc::ClientContext context;
    conn.Prepare(context);
    const grpc::Status status = conn.cluster().ListNodes(&context, v1::ListNodesRequest(), &nodes);
    if (!status.ok()) {
      PrintError(kProgram, conn.Describe(status));
      return kExitServer;
    }
  }
  v1::GetFragmentationResponse fragmentation;
  {
    grpc::ClientContext context;
    conn.Prepare(context);
    const grpc::Status status =
        conn.cluster().GetFragmentation(&context, v1::GetFragmentationRequest(), &fragmentation);
    if (!status.ok()) {
      PrintError(kProgram, conn.Describe(status));
      return kExitServer;
    }
  }
  if (o->Has("json")) {
    std::printf("{\"nodes\":%s,\"fragmentation\":%s}\n", ToJson(nodes).c_str(), ToJson(fragmentation).c_str());
    return kExitOk;
  }
  std::fputs((o->Has("nodes") ? FormatNodeLines(nodes) : FormatNodeSummary(nodes)).c_str(), stdout);
  std::fputs("\n", stdout);
  std::fputs(FormatFragmentation(fragmentation).c_str(), stdout);
  return kExitOk;
}

}  // namespace
}  // namespace phalanx::cli

int main(int argc, char** argv) { return phalanx::cli::Run(std::vector<std::string>(argv + 1, argv + argc)); }
