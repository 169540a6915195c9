/* The only entry points Slurm sees (phalanx_spank.lds): each switches on spank_context() and
 * hands over to the file of that context. */
#include <slurm/spank.h>

#include "phalanx_alloc.h"
#include "phalanx_slurmd.h"
#include "phalanx_slurmstepd.h"
#include "phalanx_srun.h"

SPANK_PLUGIN(phalanx, 1)

int slurm_spank_init(spank_t sp, int ac, char** av) {
  switch (spank_context()) {
    case S_CTX_SLURMD: return phx_slurmd_init(sp, ac, av);
    case S_CTX_LOCAL: return phx_srun_init(sp, ac, av);
    case S_CTX_ALLOCATOR: return phx_alloc_init(sp, ac, av);
    case S_CTX_REMOTE: return phx_slurmstepd_init(sp, ac, av);
    default: return 0;
  }
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char** av) {
  switch (spank_context()) {
    case S_CTX_LOCAL: return phx_srun_post_opt(sp, ac, av);
    case S_CTX_ALLOCATOR: return phx_alloc_post_opt(sp, ac, av);
    case S_CTX_REMOTE: return phx_slurmstepd_post_opt(sp, ac, av);
    default: return 0;
  }
}

int slurm_spank_user_init(spank_t sp, int ac, char** av) {
  switch (spank_context()) {
    case S_CTX_REMOTE: return phx_slurmstepd_user_init(sp, ac, av);
    default: return 0;
  }
}

int slurm_spank_task_init(spank_t sp, int ac, char** av) {
  switch (spank_context()) {
    case S_CTX_REMOTE: return phx_slurmstepd_task_init(sp, ac, av);
    default: return 0;
  }
}

int slurm_spank_exit(spank_t sp, int ac, char** av) {
  switch (spank_context()) {
    case S_CTX_LOCAL: return phx_srun_exit(sp, ac, av);
    case S_CTX_ALLOCATOR: return phx_alloc_exit(sp, ac, av);
    case S_CTX_REMOTE: return phx_slurmstepd_exit(sp, ac, av);
    default: return 0;
  }
}
