// phalanx: the admin program of the Phalanx GPU gang scheduler. This file only dispatches to
// one command per file (topology_cmd.cc, demo_cmd.cc, sim_cmd.cc; job_cmd.cc when built with
// the users' client library).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"

namespace {

constexpr const char* kUsage =
    "usage: phalanx <command> [options]\n"
    "\n"
    "Admin tool of the Phalanx topology-aware GPU gang scheduler.\n"
    "\n"
    "commands:\n"
    "  topology check FILE   validate a topology file and print its summary\n"
    "  topology show FILE    print the topology tree with free GPUs per domain\n"
    "  demo                  place a stream of demo gang jobs and print each decision\n"
    "  sim                   replay a job trace under one or more policies, side by side\n"
#ifdef PHALANX_HAVE_CLIENT
    "  job hold|release ID   hold pending jobs / release them (through phalanxd)\n"
    "  job update ID         change a job's walltime, priority class or name\n"
    "  job show ID           everything phalanxd knows about a job\n"
    "  job requeue ID        (admins) a running job back to the queue\n"
    "  job top ID            first among its owner's pending jobs\n"
    "  job suspend|resume ID (admins) stop / continue a running job (it keeps its GPUs)\n"
    "  node drain|down|resume|show NODES [--reason TEXT]   (admins, but show) scontrol's node states\n"
    "  partition show [NAME] the daemon's partitions\n"
    "  topology show --socket PATH   the daemon's live tree (free GPUs as allocated now)\n"
#endif
    "\n"
    "FILE is a Phalanx YAML file, a Slurm topology.conf, `nvidia-smi topo -m` output, an hwloc\n"
    "XML file, or gen:NAME for a built-in generator (gen:superpod:4, gen:leafspine:64:16:2,\n"
    "gen:nvl72:4, gen:mixed, gen:demo).\n"
    "\n"
    "Run `phalanx <command> --help` for the options of a command.\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string command = args[0];
  const std::span<const std::string> rest(args.data() + 1, args.size() - 1);
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
#ifdef PHALANX_HAVE_CLIENT
  if (command == "topology" && std::any_of(rest.begin(), rest.end(), [](const std::string& a) {
        return a == "--socket" || a.starts_with("--socket=");
      }))
    return phalanx::cli::RunTopologyLive(rest);
  if (command == "node") return phalanx::cli::RunNode(rest);
  if (command == "partition") return phalanx::cli::RunPartition(rest);
#endif
  if (command == "topology") return phalanx::cli::RunTopology(rest);
  if (command == "demo") return phalanx::cli::RunDemo(rest);
  if (command == "sim") return phalanx::cli::RunSim(rest);
#ifdef PHALANX_HAVE_CLIENT
  if (command == "job") return phalanx::cli::RunJob(rest);
#else
  if (command == "job") {
    phalanx::cli::PrintError(
        "'job' talks to phalanxd; this phalanx was built without the client (PHALANX_BUILD_SERVICE=OFF)");
    return 2;
  }
#endif
  phalanx::cli::PrintError("unknown command '" + command + "' (see phalanx --help)");
  return 2;
}
