// gres.conf / slurm.conf NodeName= lines (the GPU counts of a Slurm topology's nodes), read
// against a fixed two-level topology.conf whose node names the corpus uses.
#include "adapters/topology/topology_reader_slurm.h"
#include "topology_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace phalanx;
  static constexpr std::string_view kTopology =
      "SwitchName=leaf0 Nodes=dgx[001-004]\nSwitchName=leaf1 Nodes=dgx[005-008],gpu[1-2]\n"
      "SwitchName=spine Switches=leaf[0-1]\n";
  SlurmReadOptions options;
  options.gres_text = std::string(fuzz::Text(data, size));
  options.gres_filename = "gres.conf";
  // Odd sizes pick partial nodes allowed: both paths of the model variants.
  options.gpus_per_node = size % 2 == 0 ? 0 : 8;
  auto spec = ReadSlurmTopology(kTopology, "topology.conf", options);
  if (!spec) {
    fuzz::CheckError(spec.error());
    return 0;
  }
  fuzz::CheckBuild(*spec);
  return 0;
}
