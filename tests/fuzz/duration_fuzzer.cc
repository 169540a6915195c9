// Durations and times, each reader chosen by the first byte: gsub's -t (cli/user/duration.h,
// with the squeue-style FormatDuration round trip), Slurm's forms (util/duration.h), sacct's
// Elapsed/Timelimit and ISO times (sim/trace.h).
#include "duration.h"
#include "fuzz_check.h"
#include "sim/trace.h"
#include "util/duration.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace phalanx;
  if (size == 0) return 0;
  const std::string_view text = fuzz::Text(data + 1, size - 1);
  switch (data[0] % 4) {
    case 0: {
      const bool allow_zero = data[0] & 0x10;
      auto s = cli::ParseDuration(text, allow_zero);
      if (!s) return fuzz::CheckError(s.error()), 0;
      FUZZ_CHECK(*s >= 0 && *s <= int64_t{365} * 86400);
      FUZZ_CHECK(allow_zero || *s > 0);
      // What squeue prints, gsub reads back.
      auto back = cli::ParseDuration(cli::FormatDuration(*s), /*allow_zero=*/true);
      FUZZ_CHECK(back && *back == *s);
      return 0;
    }
    case 1: {
      auto s = ParseSlurmDuration(text);
      if (!s) return fuzz::CheckError(s.error()), 0;
      FUZZ_CHECK(*s >= 0);
      return 0;
    }
    case 2: {
      auto s = ParseSacctDuration(text);
      if (!s) return fuzz::CheckError(s.error()), 0;
      return 0;
    }
    default: {
      auto t = ParseIsoTime(text);
      if (!t) return fuzz::CheckError(t.error()), 0;
      return 0;
    }
  }
}
