// `nvidia-smi topo -m` output -> one node's model -> a one-node Topology.
#include "adapters/topology/topology_reader_nvsmi.h"
#include "topology_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace phalanx;
  auto model = ReadNvidiaSmiTopo(fuzz::Text(data, size), "topo.txt", NvsmiOptions{});
  if (!model) {
    fuzz::CheckError(model.error());
    return 0;
  }
  fuzz::CheckOneNode(*model);
  return 0;
}
