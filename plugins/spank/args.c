#include "args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct phx_args phx_args = {
    .topology = {PHX_LEVEL_UNSET, 0},
    .elastic_set = 0,
    .checkpoint_set = 0,
    .preemptible = -1,
    .class_name = "",
};

static int option_topology(int val, const char* optarg, int remote);
static int option_elastic(int val, const char* optarg, int remote);
static int option_checkpoint(int val, const char* optarg, int remote);
static int option_preemptible(int val, const char* optarg, int remote);
static int option_class(int val, const char* optarg, int remote);

static struct spank_option spank_opts[] = {
    {"phx-topology", "LEVEL[:prefer]",
     "[phalanx] where the job's GPUs must lie: node, nvlink, leaf, spine or any; :prefer makes it a preference", 1, 0,
     option_topology},
    {"phx-elastic", "MIN:MAX", "[phalanx] elastic job: any GPU count from MIN to MAX; Phalanx may grow or shrink it", 1,
     0, option_elastic},
    {"phx-checkpoint", "SIG[@SECS]",
     "[phalanx] signal sent SECS seconds before a preemption, shrink or walltime (e.g. USR1@120)", 1, 0,
     option_checkpoint},
    {"phx-preemptible", NULL, "[phalanx] a higher class may preempt the job (default: its class decides)", 0, 1,
     option_preemptible},
    {"phx-no-preemptible", NULL, "[phalanx] the job is never preempted", 0, 0, option_preemptible},
    {"phx-class", "NAME", "[phalanx] priority class: low, normal, high, urgent, or one the site defines", 1, 0,
     option_class},
    SPANK_OPTIONS_TABLE_END,
};

static int fail(const char* err) {
  slurm_error("phalanx: %s", err);
  return -1;
}

static int option_topology(int val, const char* optarg, int remote) {
  char err[256];
  (void)val;
  (void)remote;
  if (phx_parse_topology(optarg, &phx_args.topology, err, sizeof(err)) < 0) return fail(err);
  return 0;
}

static int option_elastic(int val, const char* optarg, int remote) {
  char err[256];
  (void)val;
  (void)remote;
  if (phx_parse_elastic(optarg, &phx_args.elastic, err, sizeof(err)) < 0) return fail(err);
  phx_args.elastic_set = 1;
  return 0;
}

static int option_checkpoint(int val, const char* optarg, int remote) {
  char err[256];
  (void)val;
  (void)remote;
  if (phx_parse_checkpoint(optarg, &phx_args.checkpoint, err, sizeof(err)) < 0) return fail(err);
  phx_args.checkpoint_set = 1;
  return 0;
}

static int option_preemptible(int val, const char* optarg, int remote) {
  (void)optarg;
  (void)remote;
  phx_args.preemptible = val;
  return 0;
}

static int option_class(int val, const char* optarg, int remote) {
  char err[256];
  (void)val;
  (void)remote;
  if (phx_parse_class(optarg, phx_args.class_name, err, sizeof(err)) < 0) return fail(err);
  return 0;
}

int phx_args_register(spank_t sp) {
  for (int i = 0; spank_opts[i].name != NULL; ++i) {
    spank_err_t rc = spank_option_register(sp, &spank_opts[i]);
    if (rc != ESPANK_SUCCESS) {
      slurm_error("phalanx: cannot register --%s: %s", spank_opts[i].name, spank_strerror(rc));
      return -1;
    }
  }
  return 0;
}

/* The job's environment in slurmstepd, the process's own in sbatch/salloc/srun. */
static const char* get_env(spank_t sp, const char* name, char* buf, size_t len) {
  if (spank_context() == S_CTX_REMOTE) return spank_getenv(sp, name, buf, (int)len) == ESPANK_SUCCESS ? buf : NULL;
  return getenv(name);
}

int phx_args_check_environment(spank_t sp) {
  char buf[256], err[256];
  const char* v;
  int b;

  if (phx_args.topology.level == PHX_LEVEL_UNSET && (v = get_env(sp, "PHALANX_TOPOLOGY", buf, sizeof(buf))) != NULL &&
      option_topology(0, v, 0) < 0)
    return -1;
  if (!phx_args.elastic_set && (v = get_env(sp, "PHALANX_ELASTIC", buf, sizeof(buf))) != NULL &&
      option_elastic(0, v, 0) < 0)
    return -1;
  if (!phx_args.checkpoint_set && (v = get_env(sp, "PHALANX_CHECKPOINT", buf, sizeof(buf))) != NULL &&
      option_checkpoint(0, v, 0) < 0)
    return -1;
  if (phx_args.class_name[0] == '\0' && (v = get_env(sp, "PHALANX_CLASS", buf, sizeof(buf))) != NULL &&
      option_class(0, v, 0) < 0)
    return -1;
  if (phx_args.preemptible == -1 && (v = get_env(sp, "PHALANX_PREEMPTIBLE", buf, sizeof(buf))) != NULL) {
    if (phx_parse_bool(v, &b, err, sizeof(err)) < 0) {
      slurm_error("phalanx: PHALANX_PREEMPTIBLE=%s: %s", v, err);
      return -1;
    }
    phx_args.preemptible = b;
  }
  return 0;
}

const struct phx_args* phx_args_get(void) { return &phx_args; }

int phx_args_managed(void) {
  return phx_args.topology.level != PHX_LEVEL_UNSET || phx_args.elastic_set || phx_args.checkpoint_set ||
         phx_args.preemptible != -1 || phx_args.class_name[0] != '\0';
}

void phx_args_summary(const struct phx_topology* default_topology, char* buf, size_t len) {
  const struct phx_topology* t = &phx_args.topology;
  size_t n = 0;

  buf[0] = '\0';
#define PHX_APPEND(...)                                                \
  do {                                                                 \
    if (n < len) n += (size_t)snprintf(buf + n, len - n, __VA_ARGS__); \
  } while (0)
  if (t->level == PHX_LEVEL_UNSET && default_topology != NULL) t = default_topology;
  if (t->level != PHX_LEVEL_UNSET) PHX_APPEND("topology=%s%s,", phx_level_name(t->level), t->prefer ? ":prefer" : "");
  if (phx_args.elastic_set) PHX_APPEND("elastic=%u:%u,", phx_args.elastic.min_gpus, phx_args.elastic.max_gpus);
  if (phx_args.checkpoint_set)
    PHX_APPEND("checkpoint=%d@%lld,", phx_args.checkpoint.signal, phx_args.checkpoint.warning_s);
  if (phx_args.preemptible != -1) PHX_APPEND("preemptible=%d,", phx_args.preemptible);
  if (phx_args.class_name[0] != '\0') PHX_APPEND("class=%s,", phx_args.class_name);
#undef PHX_APPEND
  if (n > 0 && n <= len) buf[n - 1] = '\0'; /* the last comma */
}

int phx_args_forward(spank_t sp, const struct phx_config* config) {
  char summary[512], delay[16];
  spank_err_t rc;

  if (!phx_args_managed()) return 0;
  phx_args_summary(&config->default_topology, summary, sizeof(summary));
  snprintf(delay, sizeof(delay), "%d", config->fallback_delay_s);
  if ((rc = spank_job_control_setenv(sp, "PHALANX_MANAGED", summary, 1)) != ESPANK_SUCCESS ||
      (rc = spank_job_control_setenv(sp, "PHALANX_FALLBACK_DELAY_S", delay, 1)) != ESPANK_SUCCESS) {
    slurm_error("phalanx: cannot pass the job's options to slurmctld: %s", spank_strerror(rc));
    return -1;
  }
  return 0;
}

void phx_args_reset(void) {
  memset(&phx_args, 0, sizeof(phx_args));
  phx_args.preemptible = -1;
}
