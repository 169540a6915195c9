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

// Prints "phalanx: <message>" to stderr.
void PrintError(const std::string& message);

}  // namespace phalanx::cli
