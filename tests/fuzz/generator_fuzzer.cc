// `gen:` names (phalanx topology check gen:superpod:4, YAML `generate:`) -> TopologySpec ->
// Topology. The limits must refuse a huge fabric before it is built: a generated spec over them
// is a bug (the fuzzer's -rss_limit_mb catches one that slips through by size).
#include "core/topology/node_models.h"
#include "topology_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace phalanx;
  auto spec = GenerateByName(fuzz::Text(data, size));
  if (!spec) {
    fuzz::CheckError(spec.error());
    return 0;
  }
  FUZZ_CHECK(static_cast<int64_t>(spec->nodes.size()) <= kMaxTopologyNodes);
  // Building the largest allowed fabrics takes ~1 s under ASan: build the small ones (the
  // generators' shapes do not change with size), to keep the executions fast.
  if (spec->nodes.size() <= 512) fuzz::CheckBuild(*spec);
  return 0;
}
