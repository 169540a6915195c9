/* Local context (srun): options validated at submit, hints forwarded to slurmctld.
 * No network I/O here. */
#ifndef PHALANX_SPANK_SRUN_H
#define PHALANX_SPANK_SRUN_H

#include <slurm/spank.h>

int phx_srun_init(spank_t sp, int ac, char** av);
int phx_srun_post_opt(spank_t sp, int ac, char** av);
int phx_srun_exit(spank_t sp, int ac, char** av);

#endif /* PHALANX_SPANK_SRUN_H */
