// The commands of the phalanx admin program. Each takes the arguments after its name, writes
// results to stdout and errors to stderr ("phalanx: FILE:LINE: message"), and returns the exit
// status: 0 success, 1 a failed check or a bad input file, 2 a usage error.
#pragma once

#include <span>
#include <string>

namespace phalanx::cli {

int RunTopology(std::span<const std::string> args);
int RunDemo(std::span<const std::string> args);
int RunSim(std::span<const std::string> args);
// hold, release, update, show: through phalanxd (job_cmd.cc; only when built with the users'
// client library, PHALANX_HAVE_CLIENT). Exit status: 0, 1 when phalanxd refused a job or could
// not be reached, 2 a usage error.
int RunJob(std::span<const std::string> args);
// node drain|down|resume|show, partition show, topology show --socket (the daemon's live tree):
// through phalanxd (cluster_cmd.cc; PHALANX_HAVE_CLIENT only). Exit status as RunJob's.
int RunNode(std::span<const std::string> args);
int RunPartition(std::span<const std::string> args);
int RunTopologyLive(std::span<const std::string> args);

// Prints "phalanx: <message>" to stderr.
void PrintError(const std::string& message);

}  // namespace phalanx::cli
