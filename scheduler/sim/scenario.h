// Scenario scripts: a readable text format that drives the scheduling core through events at
// given times and records its decisions, one line each. Golden files in tests/scenarios/ pin
// each behaviour; `phalanx scenario FILE` runs one. The format is described in
// docs/scheduling.md#scenario-files.
// Thread-safety: pure function (no I/O: text in, text out).
#pragma once

#include <string>
#include <string_view>

#include "core/common/result.h"

namespace phalanx {

// Runs the script and returns the decision log. Parse errors and failed events name
// `filename:line`. Every step also checks the scheduler's invariants and fails if one breaks.
// `expect` lines (docs/scheduling.md#expectations) print nothing; a failing one fails the run,
// naming its `filename:line`, the expectation and what was seen.
Result<std::string> RunScenario(std::string_view text, std::string_view filename);

}  // namespace phalanx
