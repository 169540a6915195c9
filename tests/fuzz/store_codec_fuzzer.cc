// The store's text codec (what phalanxd reads back from its SQLite file after a restart): every
// decoder, chosen by the first byte. Whatever decodes must re-encode to a text that decodes to
// the same encoding (one value, one encoding).
#include "adapters/store/codec.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace phalanx;
  using namespace phalanx::store;
  if (size == 0) return 0;
  const std::string_view text = fuzz::Text(data + 1, size - 1);
  switch (data[0] % 4) {
    case 0: {
      auto spec = DecodeJobSpec(text);
      if (!spec) return fuzz::CheckError(spec.error()), 0;
      const std::string once = EncodeJobSpec(*spec);
      auto again = DecodeJobSpec(once);
      FUZZ_CHECK(again && EncodeJobSpec(*again) == once);
      return 0;
    }
    case 1: {
      auto gpus = DecodeGpus(text);
      if (!gpus) return fuzz::CheckError(gpus.error()), 0;
      auto again = DecodeGpus(EncodeGpus(*gpus));
      FUZZ_CHECK(again && *again == *gpus);
      return 0;
    }
    case 2: {
      auto ids = DecodeJobIds(text);
      if (!ids) return fuzz::CheckError(ids.error()), 0;
      auto again = DecodeJobIds(EncodeJobIds(*ids));
      FUZZ_CHECK(again && *again == *ids);
      return 0;
    }
    default: {
      auto s = Unescape(text);
      if (!s) return fuzz::CheckError(s.error()), 0;
      auto again = Unescape(Escape(*s));
      FUZZ_CHECK(again && *again == *s);
      return 0;
    }
  }
}
