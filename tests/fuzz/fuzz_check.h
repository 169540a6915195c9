// What the fuzz targets share: FUZZ_CHECK aborts (a crash libFuzzer reports and saves) when an
// invariant of a reader fails, and CheckError asserts a refusal is well formed.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "core/common/result.h"

#define FUZZ_CHECK(cond)                                                                     \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                          \
    }                                                                                        \
  } while (0)

namespace phalanx::fuzz {

// A refusal has a message (an empty one would leave the user with nothing to fix).
inline void CheckError(const Error& e) { FUZZ_CHECK(!e.message.empty()); }

inline std::string_view Text(const uint8_t* data, size_t size) { return {reinterpret_cast<const char*>(data), size}; }

}  // namespace phalanx::fuzz
