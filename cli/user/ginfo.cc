// ginfo: the cluster's nodes and free blocks (sinfo's habits), or why a job waits (--why).
// See docs/user-guide.md.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <set>
#include <string>
#include <vector>

#include "client.h"
#include "node_table.h"
#include "options.h"
#include "partition_table.h"
#include "util/hostlist.h"
#include "util/strings.h"

namespace phalanx::cli {
namespace {

constexpr const char* kProgram = "ginfo";

constexpr OptionSpec kSpecs[] = {
    {"nodes", 'N', "", "one line per node"},
    {"partition", 'p', "PART[,PART...]", "only these partitions"},
    {"summarize", 's', "", "one line per partition: NODES(A/I/O/T) = allocated/idle/other/total"},
    {"list-reasons", 'R', "", "why nodes are drained or down: REASON USER TIMESTAMP NODELIST"},
    {"long", 'l', "", "more columns: default time, max GPUs per job, groups, GPUs, free GPUs"},
    {"format", 'o', "FORMAT", "partition lines as %[.][WIDTH]LETTER fields (see below)"},
    {"node", 'n', "HOSTLIST", "only these nodes"},
    {"states", 't', "STATE[,STATE...]", "only nodes in these states: idle, mix, alloc, drng, drain, down"},
    {"noheader", 'h', "", "no header line (as sinfo -h; help is --help)"},
    {"why", 0, "ID", "why job ID is pending: reason, queue position, predicted start, reserved GPUs"},
    {"json", 0, "", "print the responses as JSON"},
    {"socket", 0, "PATH", "phalanxd's socket (default $PHALANX_SOCKET, /run/phalanx/phalanxd.sock)"},
    {"server", 0, "HOST:PORT[,...]",
     "phalanxd over TCP, addresses tried in order (default $PHALANX_SERVER, /etc/phalanx/phalanx.conf)"},
    {"help", 0, "", "this help"},
};

constexpr const char* kUsage =
    "usage: ginfo [-p PART] [-s | -R | -l | -o FORMAT | -N] [-n NODES] [-t STATES] [-h] [--json]\n"
    "       ginfo --why ID [--json]\n"
    "\n"
    "Like sinfo: one line per partition and node state (idle, mix, alloc, drng, drain, down;\n"
    "* = agent not connected): PARTITION (* = the default) AVAIL TIMELIMIT NODES STATE NODELIST;\n"
    "then the free blocks per topology level: how many domains of the level are entirely free\n"
    "and the largest free block inside one of them.\n"
    "\n"
    "options:\n";

constexpr const char* kFieldsHelp =
    "\n"
    "format fields (-o): %P PARTITION, %a AVAIL, %l TIMELIMIT, %L DEFAULTTIME, %D NODES, %t STATE,\n"
    "  %T STATE (long names), %N NODELIST, %G GPUS, %f FREE, %E REASON, %u USER, %H TIMESTAMP,\n"
    "  %g GROUPS, %m MAX_GPUS. \"%.6D\" right-justifies in 6 columns.\n"
    "default: \"%P  %a  %.l  %.D  %t  %N\"\n";

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
  auto o = ParseCommand(kProgram, args, kSpecs, kUsage, kFieldsHelp);
  if (!o) return o.error();
  if (!o->positional.empty()) {
    PrintError(kProgram, "unexpected argument '" + o->positional[0] + "' (see --help)");
    return kExitUsage;
  }
  auto connection = Connect(kProgram, o->Get("server"), o->Get("socket"));
  if (!connection) return kExitUsage;
  Connection& conn = *connection;
  if (const OptionValue* why = o->Find("why")) return Why(conn, *why, o->Has("json"));
  PartitionFilter filter;
  if (const OptionValue* v = o->Find("partition")) {
    for (std::string_view p : SplitNonEmpty(v->value, ',')) filter.partitions.emplace(p);
    if (filter.partitions.empty()) {
      PrintError(kProgram, v->Bad("'' names no partition").ToString());
      return kExitUsage;
    }
  }
  if (const OptionValue* v = o->Find("node")) {
    auto names = ExpandHostlist(v->value, v->flag);
    if (!names) {
      PrintError(kProgram, v->Bad(names.error().message).ToString());
      return kExitUsage;
    }
    filter.nodes.insert(names->begin(), names->end());
  }
  if (const OptionValue* v = o->Find("states")) {
    static const std::set<std::string> kStates = {"idle", "mix", "alloc", "drng", "drain", "down"};
    for (std::string_view s : SplitNonEmpty(v->value, ',')) {
      std::string lower(s);
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower == "allocated") lower = "alloc";
      if (lower == "mixed") lower = "mix";
      if (lower == "draining") lower = "drng";
      if (lower == "drained") lower = "drain";
      if (!kStates.contains(lower)) {
        PrintError(
            kProgram,
            v->Bad("'" + std::string(s) + "' is not a node state (idle, mix, alloc, drng, drain, down)").ToString());
        return kExitUsage;
      }
      filter.states.insert(lower);
    }
  }
  std::string format(o->Has("long") ? kLongPartitionFormat : kDefaultPartitionFormat);
  if (const OptionValue* v = o->Find("format")) {
    format = v->value;
    if (auto st = CheckPartitionFormat(format); !st) {
      PrintError(kProgram, v->Bad(st.error().message).ToString());
      return kExitUsage;
    }
  }
  const bool header = !o->Has("noheader");

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
  v1::PartitionListResponse partitions;
  if (!o->Has("nodes")) {
    grpc::ClientContext context;
    conn.Prepare(context);
    const grpc::Status status = conn.cluster().ListPartitions(&context, v1::PartitionListRequest(), &partitions);
    if (!status.ok()) {
      PrintError(kProgram, conn.Describe(status));
      return kExitServer;
    }
    for (const std::string& p : filter.partitions) {
      if (std::none_of(partitions.partitions().begin(), partitions.partitions().end(),
                       [&](const v1::Partition& x) { return x.name() == p; })) {
        PrintError(kProgram, "-p: unknown partition '" + p + "'");
        return kExitUsage;
      }
    }
  }
  if (o->Has("list-reasons")) {
    if (o->Has("json")) {
      std::printf("%s\n", ToJson(nodes).c_str());
    } else {
      std::fputs(FormatReasons(nodes, filter, header).c_str(), stdout);
    }
    return kExitOk;
  }
  if (o->Has("summarize") && !o->Has("json")) {
    std::fputs(FormatPartitionSummary(partitions, nodes, filter, header).c_str(), stdout);
    return kExitOk;
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
    std::printf("{\"nodes\":%s,\"partitions\":%s,\"fragmentation\":%s}\n", ToJson(nodes).c_str(),
                ToJson(partitions).c_str(), ToJson(fragmentation).c_str());
    return kExitOk;
  }
  if (o->Has("nodes")) {
    std::fputs(FormatNodeLines(nodes).c_str(), stdout);
  } else {
    std::fputs(FormatPartitionTable(partitions, nodes, filter, format, header).c_str(), stdout);
  }
  // The free blocks only with the default view (a custom or filtered one is for scripts).
  if (o->Has("format") || o->Has("noheader") || !filter.partitions.empty() || !filter.nodes.empty() ||
      !filter.states.empty())
    return kExitOk;
  std::fputs("\n", stdout);
  std::fputs(FormatFragmentation(fragmentation).c_str(), stdout);
  return kExitOk;
}

}  // namespace
}  // namespace phalanx::cli

int main(int argc, char** argv) { return phalanx::cli::Run(std::vector<std::string>(argv + 1, argv + argc)); }
