// Slurm hostlists: expansion within its limits, and FormatHostlist / CompressHostlist round trips.
#include <algorithm>

#include "fuzz_check.h"
#include "util/hostlist.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace phalanx;
  auto names = ExpandHostlist(fuzz::Text(data, size), "fuzz");
  if (!names) {
    fuzz::CheckError(names.error());
    return 0;
  }
  FUZZ_CHECK(!names->empty() && names->size() <= kMaxHostlistHosts);
  // The round trips below cost ~1 ms per 1,000 names under ASan: long lists are left to the
  // expansion (and its limits) alone, to keep the executions fast.
  if (names->size() > 2000) return 0;
  auto again = ExpandHostlist(FormatHostlist(*names), "fuzz");
  FUZZ_CHECK(again && *again == *names);
  auto compressed = ExpandHostlist(CompressHostlist(*names), "fuzz");
  FUZZ_CHECK(compressed.has_value());
  std::vector<std::string> unique = *names;
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  std::vector<std::string> got = *compressed;
  std::sort(got.begin(), got.end());
  FUZZ_CHECK(got == unique);
  return 0;
}
