// Phalanx topology YAML (yaml-cpp, then the reader's schema checks) -> TopologySpec -> Topology.
#include "adapters/topology/topology_reader_yaml.h"
#include "topology_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace phalanx;
  auto spec = ReadTopologyYaml(fuzz::Text(data, size), "cluster.yaml");
  if (!spec) {
    fuzz::CheckError(spec.error());
    return 0;
  }
  fuzz::CheckBuild(*spec);
  return 0;
}
