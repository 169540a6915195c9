// Simulator traces: CSV or sacct --parsable2 (sniffed from the header) -> jobs.
#include "fuzz_check.h"
#include "sim/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace phalanx;
  auto trace = ReadTrace(fuzz::Text(data, size), "trace.csv");
  if (!trace) {
    fuzz::CheckError(trace.error());
    return 0;
  }
  Time previous = 0;
  for (const TraceJob& j : trace->jobs) {
    FUZZ_CHECK(j.gpus > 0);
    FUZZ_CHECK(j.duration >= 0);
    FUZZ_CHECK(j.submit >= previous);  // sorted, relative to the earliest
    previous = j.submit;
  }
  if (!trace->jobs.empty()) FUZZ_CHECK(trace->jobs.front().submit == 0);
  return 0;
}
