// `lstopo --of xml` output (through the reader's pre-check, then hwloc's XML importer) -> one
// node's model -> a one-node Topology.
#include "adapters/topology/topology_reader_hwloc.h"
#include "topology_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace phalanx;
  auto model = ReadHwlocXml(fuzz::Text(data, size), "node.xml", HwlocOptions{});
  if (!model) {
    fuzz::CheckError(model.error());
    return 0;
  }
  fuzz::CheckOneNode(*model);
  return 0;
}
