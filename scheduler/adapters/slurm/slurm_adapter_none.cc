// OpenLibslurm where phalanxd was built without libslurm-dev.
#include "adapters/slurm/slurm_adapter.h"

namespace phalanx::slurm {

Result<std::unique_ptr<SlurmAdapter>> OpenLibslurm(const std::string&) {
  return Fail(ErrorCode::kFailedPrecondition, "mode: slurm",
              "this phalanxd was built without libslurm (install libslurm-dev and rebuild)");
}

}  // namespace phalanx::slurm
