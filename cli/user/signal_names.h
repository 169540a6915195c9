// Signal names as users write them: "USR1", "SIGUSR1", "usr1" or a number ("10").
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "core/common/result.h"

namespace phalanx::cli {

// The signal's number (1..64). Fails quoting the text for an unknown name or a number out of
// range.
Result<int> ParseSignal(std::string_view text);

// "USR1" for 10; the number as text for a signal without a name here.
std::string SignalName(int signal);

}  // namespace phalanx::cli
