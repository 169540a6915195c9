// phalanx node / partition / topology show --socket: the cluster side of scontrol, through
// phalanxd (`scontrol update nodename=X state=drain|resume|down reason=...`, `scontrol show
// node`, `scontrol show partition`, `scontrol show topology`). Built with the users' client
// library (PHALANX_HAVE_CLIENT), as job_cmd.cc. Draining, downing and resuming are for
// phalanxd's admins: the daemon checks (PERMISSION_DENIED otherwise).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "client.h"
#include "commands.h"
#include "job_table.h"
#include "options.h"
#include "util/duration.h"
#include "util/hostlist.h"
#include "util/printable.h"

namespace phalanx::cli {
namespace {

constexpr const char* kClusterProgram = "phalanx";

constexpr OptionSpec kNodeSpecs[] = {
    {"reason", 'r', "TEXT", "drain, down: why (shown by ginfo -R and node show)"},
    {"json", 0, "", "print the daemon's answers as JSON"},
    {"socket", 0, "PATH", "phalanxd's socket (default $PHALANX_SOCKET, /run/phalanx/phalanxd.sock)"},
    {"help", 'h', "", "this help"},
};

constexpr const char* kNodeUsage =
    "usage: phalanx node drain NODES --reason TEXT\n"
    "       phalanx node down NODES --reason TEXT\n"
    "       phalanx node resume NODES\n"
    "       phalanx node show [NODES]\n"
    "\n"
    "NODES is a hostlist (dgx[01-04],gpu7). drain: no new jobs start there, running ones finish;\n"
    "down: its jobs are requeued (from their last checkpoint) and nothing runs there; resume:\n"
    "back to work (scontrol update nodename=... state=drain|down|resume reason=...). Only\n"
    "phalanxd's admins may change a node. show: scontrol show node's Key=Value layout.\n"
    "\n"
    "options:\n";

constexpr OptionSpec kShowSpecs[] = {
    {"json", 0, "", "print the daemon's answer as JSON"},
    {"socket", 0, "PATH", "phalanxd's socket (default $PHALANX_SOCKET, /run/phalanx/phalanxd.sock)"},
    {"help", 'h', "", "this help"},
};

Connection Connect(const ParsedOptions& o) {
  return Connection(ResolveSocket(o.Get("socket"), std::getenv("PHALANX_SOCKET"), CurrentDir()),
                    ResolveDeadline(std::getenv("PHALANX_TIMEOUT")));
}

std::string StateName(v1::NodeState s) {
  switch (s) {
    case v1::NODE_STATE_UP: return "UP";
    case v1::NODE_STATE_DRAIN: return "DRAIN";
    case v1::NODE_STATE_DOWN: return "DOWN";
    default: return "UNKNOWN";
  }
}

std::string ShowNode(const v1::Node& n) {
  std::string parts;
  for (const std::string& p : n.partitions()) parts += (parts.empty() ? "" : ",") + p;
  std::string jobs;
  for (uint64_t j : n.jobs()) jobs += (jobs.empty() ? "" : ",") + std::to_string(j);
  std::string out = "NodeName=" + Printable(n.name()) + " State=" + StateName(n.state()) +
                    " Agent=" + (n.agent_connected() ? "connected" : "not-connected") + "\n";
  out += "   GPUs=" + std::to_string(n.gpus()) + " GPUsFree=" + std::to_string(n.gpus_free()) +
         " Model=" + Printable(n.model()) + " Leaf=" + Printable(n.leaf()) + "\n";
  out += "   Partitions=" + (parts.empty() ? "(null)" : Printable(parts)) +
         " Jobs=" + (jobs.empty() ? "(null)" : jobs) + "\n";
  out += "   LastHeartbeat=" + FormatTime(n.last_heartbeat()) + "\n";
  if (!n.reason().empty() || n.state() != v1::NODE_STATE_UP) {
    out += "   Reason=" + (n.reason().empty() ? std::string("(null)") : Printable(n.reason())) + " [" +
           (n.reason_user().empty() ? std::string("phalanxd") : Printable(n.reason_user())) + "@" +
           FormatTime(n.reason_time()) + "]\n";
  }
  return out;
}

std::string ShowPartition(const v1::Partition& p) {
  const auto list = [](const auto& xs) {
    std::string s;
    for (const std::string& x : xs) s += (s.empty() ? "" : ",") + Printable(x);
    return s.empty() ? std::string("-") : s;
  };
  const bool open = p.allow_users().empty() && p.allow_groups().empty() && p.allow_accounts().empty();
  std::string out = "PartitionName=" + Printable(p.name()) + "\n";
  out += "   State=" + p.state() + " Default=" + (p.is_default() ? "YES" : "NO") +
         " QoS=" + (p.default_qos().empty() ? std::string("N/A") : Printable(p.default_qos())) + "\n";
  out += std::string("   AllowUsers=") + (open ? "ALL" : list(p.allow_users())) +
         " AllowGroups=" + (open ? "ALL" : list(p.allow_groups())) +
         " AllowAccounts=" + (open ? "ALL" : list(p.allow_accounts())) + "\n";
  out += "   DefaultTime=" + FormatSlurmDuration(p.default_walltime_s()) + " MaxTime=" +
         (p.max_walltime_unlimited() ? std::string("UNLIMITED") : FormatSlurmDuration(p.max_walltime_s())) +
         " MaxGPUsPerJob=" +
         (p.max_gpus_per_job() == 0 ? std::string("UNLIMITED") : std::to_string(p.max_gpus_per_job())) +
         " MaxGPUsPerUser=" +
         (p.max_gpus_per_user() == 0 ? std::string("UNLIMITED") : std::to_string(p.max_gpus_per_user())) + "\n";
  out += "   Nodes=" + Printable(p.nodelist()) + " TotalNodes=" + std::to_string(p.nodes_size()) +
         " TotalGPUs=" + std::to_string(p.gpus()) + " FreeGPUs=" + std::to_string(p.gpus_free()) + "\n";
  return out;
}

}  // namespace

int RunNode(std::span<const std::string> args) {
  if (args.empty()) {
    std::fputs(kNodeUsage, stderr);
    return kExitUsage;
  }
  const std::string action = args[0];
  auto o = ParseOptions(args.subspan(1), kNodeSpecs, Positionals::kInterleaved);
  if (!o) {
    PrintError(kClusterProgram, "node " + action + ": " + o.error().ToString());
    return kExitUsage;
  }
  if (action == "--help" || action == "-h" || action == "help" || o->Has("help")) {
    std::fputs(kNodeUsage, stdout);
    std::fputs(OptionsHelp(kNodeSpecs).c_str(), stdout);
    return kExitOk;
  }
  if (action != "drain" && action != "resume" && action != "down" && action != "show") {
    PrintError(kClusterProgram,
               "node: unknown action '" + action + "' (drain, down, resume or show; see phalanx node --help)");
    return kExitUsage;
  }
  std::vector<std::string> names;
  for (const std::string& a : o->positional) {
    auto expanded = ExpandHostlist(a, "node " + action);
    if (!expanded) {
      PrintError(kClusterProgram, expanded.error().ToString());
      return kExitUsage;
    }
    names.insert(names.end(), expanded->begin(), expanded->end());
  }
  if (names.empty() && action != "show") {
    PrintError(kClusterProgram, "node " + action + ": no node given (phalanx node " + action + " NODES)");
    return kExitUsage;
  }
  if ((action == "drain" || action == "down") && o->Get("reason").empty()) {
    PrintError(kClusterProgram, "node " + action + ": --reason TEXT is required (as scontrol asks for one)");
    return kExitUsage;
  }
  if ((action == "resume" || action == "show") && o->Has("reason")) {
    PrintError(kClusterProgram, "node " + action + ": --reason is for drain and down");
    return kExitUsage;
  }
  Connection conn = Connect(*o);
  int rc = kExitOk;
  v1::ListNodesResponse shown;
  if (action == "show") {
    grpc::ClientContext context;
    conn.Prepare(context);
    v1::ListNodesResponse all;
    const grpc::Status status = conn.cluster().ListNodes(&context, v1::ListNodesRequest(), &all);
    if (!status.ok()) {
      PrintError(kClusterProgram, conn.Describe(status));
      return kExitServer;
    }
    for (const std::string& n : names) {
      if (std::none_of(all.nodes().begin(), all.nodes().end(), [&](const v1::Node& x) { return x.name() == n; })) {
        PrintError(kClusterProgram, "node " + n + ": no such node");
        rc = kExitServer;
      }
    }
    for (const v1::Node& n : all.nodes()) {
      if (names.empty() || std::find(names.begin(), names.end(), n.name()) != names.end()) *shown.add_nodes() = n;
    }
  } else {
    for (const std::string& n : names) {
      v1::NodeRequest request;
      request.set_node(n);
      request.set_reason(o->Get("reason"));
      grpc::ClientContext context;
      conn.Prepare(context);
      v1::Node node;
      const grpc::Status status = action == "drain"  ? conn.cluster().DrainNode(&context, request, &node)
                                  : action == "down" ? conn.cluster().DownNode(&context, request, &node)
                                                     : conn.cluster().ResumeNode(&context, request, &node);
      if (!status.ok()) {
        PrintError(kClusterProgram, "node " + n + ": " + conn.Describe(status));
        rc = kExitServer;
        if (status.error_code() == grpc::StatusCode::UNAVAILABLE) return rc;
        continue;
      }
      *shown.add_nodes() = node;
    }
  }
  if (o->Has("json")) {
    std::printf("%s\n", ToJson(shown).c_str());
  } else if (action == "show") {
    std::string text;
    for (const v1::Node& n : shown.nodes()) text += (text.empty() ? "" : "\n") + ShowNode(n);
    std::fputs(text.c_str(), stdout);
  }
  return rc;
}

int RunPartition(std::span<const std::string> args) {
  const std::string action = args.empty() ? "" : args[0];
  auto o = ParseOptions(args.empty() ? args : args.subspan(1), kShowSpecs, Positionals::kInterleaved);
  constexpr const char* kClusterUsage =
      "usage: phalanx partition show [NAME]\n"
      "\n"
      "The partitions phalanxd has (its config's `partitions:`), in scontrol show partition's layout.\n"
      "\n"
      "options:\n";
  if (!o) {
    PrintError(kClusterProgram, "partition: " + o.error().ToString());
    return kExitUsage;
  }
  if (action == "--help" || action == "-h" || action == "help" || o->Has("help")) {
    std::fputs(kClusterUsage, stdout);
    std::fputs(OptionsHelp(kShowSpecs).c_str(), stdout);
    return kExitOk;
  }
  if (action != "show") {
    PrintError(kClusterProgram, "partition: unknown action '" + action + "' (show; see phalanx partition --help)");
    return kExitUsage;
  }
  if (o->positional.size() > 1) {
    PrintError(kClusterProgram,
               "partition show: one partition at a time (got " + std::to_string(o->positional.size()) + ")");
    return kExitUsage;
  }
  Connection conn = Connect(*o);
  grpc::ClientContext context;
  conn.Prepare(context);
  v1::PartitionListResponse all;
  const grpc::Status status = conn.cluster().ListPartitions(&context, v1::PartitionListRequest(), &all);
  if (!status.ok()) {
    PrintError(kClusterProgram, conn.Describe(status));
    return kExitServer;
  }
  v1::PartitionListResponse shown;
  for (const v1::Partition& p : all.partitions()) {
    if (o->positional.empty() || p.name() == o->positional[0]) *shown.add_partitions() = p;
  }
  if (!o->positional.empty() && shown.partitions().empty()) {
    PrintError(kClusterProgram, "partition " + o->positional[0] + ": no such partition");
    return kExitServer;
  }
  if (o->Has("json")) {
    std::printf("%s\n", ToJson(shown).c_str());
    return kExitOk;
  }
  std::string text;
  for (const v1::Partition& p : shown.partitions()) text += (text.empty() ? "" : "\n") + ShowPartition(p);
  std::fputs(text.c_str(), stdout);
  return kExitOk;
}

int RunTopologyLive(std::span<const std::string> args) {
  auto o = ParseOptions(args, kShowSpecs, Positionals::kInterleaved);
  if (!o) {
    PrintError(kClusterProgram, "topology show: " + o.error().ToString());
    return kExitUsage;
  }
  if (o->positional.size() != 1 || o->positional[0] != "show") {
    PrintError(kClusterProgram,
               "topology: with --socket only 'phalanx topology show --socket PATH' (the daemon's live tree)");
    return kExitUsage;
  }
  Connection conn = Connect(*o);
  grpc::ClientContext context;
  conn.Prepare(context);
  v1::GetTopologyResponse topo;
  const grpc::Status status = conn.cluster().GetTopology(&context, v1::GetTopologyRequest(), &topo);
  if (!status.ok()) {
    PrintError(kClusterProgram, conn.Describe(status));
    return kExitServer;
  }
  if (o->Has("json")) {
    std::printf("%s\n", ToJson(topo).c_str());
  } else {
    std::fputs(topo.text().c_str(), stdout);
    if (!topo.text().empty() && topo.text().back() != '\n') std::fputs("\n", stdout);
  }
  return kExitOk;
}

}  // namespace phalanx::cli
