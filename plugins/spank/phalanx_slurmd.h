/* slurmd context: the plugstack.conf arguments are checked when slurmd starts, so a typo stops
 * slurmd with the key named instead of failing every job later. */
#ifndef PHALANX_SPANK_SLURMD_H
#define PHALANX_SPANK_SLURMD_H

#include <slurm/spank.h>

int phx_slurmd_init(spank_t sp, int ac, char** av);

#endif /* PHALANX_SPANK_SLURMD_H */
