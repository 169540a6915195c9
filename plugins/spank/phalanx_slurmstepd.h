/* Remote context (slurmstepd, once per step per node): PHALANX_* variables for the tasks (user_init;
 * the restart count in task_init, once per task), and the step's start and end reported to
 * phalanxd for managed jobs, bounded by timeout_ms. */
#ifndef PHALANX_SPANK_SLURMSTEPD_H
#define PHALANX_SPANK_SLURMSTEPD_H

#include <slurm/spank.h>

int phx_slurmstepd_init(spank_t sp, int ac, char** av);
int phx_slurmstepd_post_opt(spank_t sp, int ac, char** av);
int phx_slurmstepd_user_init(spank_t sp, int ac, char** av);
int phx_slurmstepd_task_init(spank_t sp, int ac, char** av);
int phx_slurmstepd_exit(spank_t sp, int ac, char** av);

#endif /* PHALANX_SPANK_SLURMSTEPD_H */
