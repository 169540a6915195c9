// Slurm topology.conf (SwitchName= lines) -> TopologySpec -> Topology.
#include "adapters/topology/topology_reader_slurm.h"
#include "topology_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace phalanx;
  auto spec = ReadSlurmTopology(fuzz::Text(data, size), "topology.conf", SlurmReadOptions{});
  if (!spec) {
    fuzz::CheckError(spec.error());
    return 0;
  }
  fuzz::CheckBuild(*spec);
  return 0;
}
