/* Allocator context (sbatch, salloc): options validated at submit, hints forwarded to slurmctld.
 * No network I/O here. */
#ifndef PHALANX_SPANK_ALLOC_H
#define PHALANX_SPANK_ALLOC_H

#include <slurm/spank.h>

int phx_alloc_init(spank_t sp, int ac, char** av);
int phx_alloc_post_opt(spank_t sp, int ac, char** av);
int phx_alloc_exit(spank_t sp, int ac, char** av);

#endif /* PHALANX_SPANK_ALLOC_H */
