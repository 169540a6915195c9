// phalanx: the admin program of the Phalanx GPU gang scheduler. This file only dispatches to
// one command per file (topology_cmd.cc, demo_cmd.cc, sim_cmd.cc).
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
  if (command == "topology") return phalanx::cli::RunTopology(rest);
  if (command == "demo") return phalanx::cli::RunDemo(rest);
  if (command == "sim") return phalanx::cli::RunSim(rest);
  phalanx::cli::PrintError("unknown command '" + command + "' (see phalanx --help)");
  return 2;
}
