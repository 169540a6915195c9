// PHALANX_QUALITY_SCALE: a factor (default 1) on the case, step or seed counts of the slow
// randomized tests, for slow builds (tests/run.sh's ASan run sets 0.25). The same code paths run.
#pragma once

#include <cstdlib>

namespace phalanx::testing {

inline double QualityScale() {
  const char* s = std::getenv("PHALANX_QUALITY_SCALE");
  const double v = s != nullptr ? std::atof(s) : 1.0;
  return v > 0 ? v : 1.0;
}

}  // namespace phalanx::testing
