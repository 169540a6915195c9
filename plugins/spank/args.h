/* The --phx-* options: one table, one callback per option, the values in one static struct.
 * Every callback may run more than once (Slurm calls it for #SBATCH lines, the command line, and
 * again in each step from SLURM_SPANK__* variables): the last value wins. Environment fallbacks
 * (PHALANX_TOPOLOGY, PHALANX_ELASTIC, PHALANX_CHECKPOINT, PHALANX_PREEMPTIBLE, PHALANX_CLASS)
 * apply in post_opt to options not given. Errors are logged here, once, as "phalanx: ...".
 * Thread-safety: none needed (each Slurm process runs the plugin on one thread). */
#ifndef PHALANX_SPANK_ARGS_H
#define PHALANX_SPANK_ARGS_H

#include <stddef.h>

#include <slurm/spank.h>

#include "parse.h"

struct phx_args {
  struct phx_topology topology; /* level PHX_LEVEL_UNSET: not given */
  int elastic_set;
  struct phx_elastic elastic;
  int checkpoint_set;
  struct phx_checkpoint checkpoint;
  int preemptible;                /* -1: not given (the class decides), 0, 1 */
  char class_name[PHX_CLASS_MAX]; /* "": not given */
};

/* Registers every option (slurm_spank_init only). 0/-1. */
int phx_args_register(spank_t sp);
/* Applies the environment fallbacks; fails (logged) on a bad value in one of them. */
int phx_args_check_environment(spank_t sp);
const struct phx_args* phx_args_get(void);
/* 1 when any --phx-* option (or fallback) was given: the job is Phalanx's to place. */
int phx_args_managed(void);
/* "topology=leaf:prefer,elastic=8:64,checkpoint=10@120,preemptible=1,class=low" (given fields
 * only; `default_topology` stands in for an absent --phx-topology when it is set). */
void phx_args_summary(const struct phx_topology* default_topology, char* buf, size_t len);
/* sbatch/salloc/srun: a managed job's hints go to slurmctld in the job's control environment
 * (job_submit.lua reads job_desc.spank_job_env): PHALANX_MANAGED=<summary> and
 * PHALANX_FALLBACK_DELAY_S=<config>. Nothing for an unmanaged job. 0/-1 (logged). */
int phx_args_forward(spank_t sp, const struct phx_config* config);
void phx_args_reset(void);

#endif /* PHALANX_SPANK_ARGS_H */
