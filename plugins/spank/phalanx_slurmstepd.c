#include "phalanx_slurmstepd.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "config.h"
#include "report.h"
#include "ring.h"
#include "signed_report.h"

struct plugin_context {
  struct phx_config config;
  uint32_t job_id;
  uint32_t step_id;
  int reported; /* 1: phalanxd answered the start report, so the end is reported too */
  char node[256];
};

static struct plugin_context context;

int phx_slurmstepd_init(spank_t sp, int ac, char** av) {
  if (phx_config_load(&context.config, ac, av) < 0) return -1;
  return phx_args_register(sp);
}

int phx_slurmstepd_post_opt(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  return phx_args_check_environment(sp);
}

static int set_env(spank_t sp, const char* name, const char* value) {
  spank_err_t rc = spank_setenv(sp, name, value, 1);
  if (rc != ESPANK_SUCCESS) {
    slurm_error("phalanx: cannot set %s in job %u: %s", name, context.job_id, spank_strerror(rc));
    return -1;
  }
  return 0;
}

/* How often Slurm requeued the job: SLURM_RESTART_COUNT in the task's environment (set from the
 * first restart on) or the S_SLURM_RESTART_COUNT item, the larger one. Both read 0 in user_init
 * of a restarted batch step (22.05: slurmstepd fills them in later), hence task_init. */
static uint32_t restart_count(spank_t sp) {
  uint32_t item = 0, env = 0;
  char buf[32];
  if (spank_getenv(sp, "SLURM_RESTART_COUNT", buf, sizeof(buf)) == ESPANK_SUCCESS)
    env = (uint32_t)strtoul(buf, NULL, 10);
  if (spank_get_item(sp, S_SLURM_RESTART_COUNT, &item) != ESPANK_SUCCESS) item = 0;
  return env > item ? env : item;
}

static int export_env(spank_t sp) {
  const struct phx_args* a = phx_args_get();
  const struct phx_topology* t = a->topology.level != PHX_LEVEL_UNSET ? &a->topology : &context.config.default_topology;
  char buf[PHX_PATH_MAX + 64];
  int signal = a->checkpoint_set ? a->checkpoint.signal : 10; /* SIGUSR1, as phalanx-agent */

  snprintf(buf, sizeof(buf), "%u", context.job_id);
  if (set_env(sp, "PHALANX_JOB_ID", buf) < 0) return -1;
  snprintf(buf, sizeof(buf), "%d", signal);
  if (set_env(sp, "PHALANX_CHECKPOINT_SIGNAL", buf) < 0) return -1;
  snprintf(buf, sizeof(buf), "%lld", a->checkpoint_set ? a->checkpoint.warning_s : 0LL);
  if (set_env(sp, "PHALANX_CHECKPOINT_WARNING_S", buf) < 0) return -1;
  snprintf(buf, sizeof(buf), "%s/phalanx-checkpoint.%u", context.config.checkpoint_dir, context.job_id);
  if (set_env(sp, "PHALANX_CHECKPOINT_FILE", buf) < 0) return -1;
  if (!phx_args_managed()) return 0;
  if (context.config.report) { /* for phalanx-ckpt-done */
    if (set_env(sp, "PHALANX_REPORT_SOCKET", context.config.socket) < 0) return -1;
    snprintf(buf, sizeof(buf), "%d", context.config.timeout_ms);
    if (set_env(sp, "PHALANX_REPORT_TIMEOUT_MS", buf) < 0) return -1;
    if (context.config.munge_socket[0] != '\0' && set_env(sp, "PHALANX_MUNGE_SOCKET", context.config.munge_socket) < 0)
      return -1;
  }
  /* The job's own options, normalised: an inner srun reads them back (args.h fallbacks). */
  if (t->level != PHX_LEVEL_UNSET) {
    snprintf(buf, sizeof(buf), "%s%s", phx_level_name(t->level), t->prefer ? ":prefer" : "");
    if (set_env(sp, "PHALANX_TOPOLOGY", buf) < 0) return -1;
  }
  if (a->elastic_set) {
    snprintf(buf, sizeof(buf), "%u:%u", a->elastic.min_gpus, a->elastic.max_gpus);
    if (set_env(sp, "PHALANX_ELASTIC", buf) < 0) return -1;
  }
  if (a->preemptible != -1 && set_env(sp, "PHALANX_PREEMPTIBLE", a->preemptible ? "1" : "0") < 0) return -1;
  if (a->class_name[0] != '\0' && set_env(sp, "PHALANX_CLASS", a->class_name) < 0) return -1;
  return 0;
}

/* The step's name in reports and log lines: batch, extern, interactive or its number. */
static const char* step_name(char* buf, size_t len) {
  if (context.step_id == 0xfffffffb) return "batch";  /* SLURM_BATCH_SCRIPT */
  if (context.step_id == 0xfffffffc) return "extern"; /* SLURM_EXTERN_CONT */
  if (context.step_id == 0xfffffffa) return "interactive";
  snprintf(buf, len, "%u", context.step_id);
  return buf;
}

/* One MUNGE-signed report (signed_report.h), bounded by timeout_ms; a failure is one info line and
 * never fails the step. user_init runs as the job's user, exit as root: the credential carries
 * that uid, which phalanxd checks against the job's owner. */
static void report(const char* what) {
  char why[256], step[16], payload[1024];
  const char* s = step_name(step, sizeof(step));
  int rc = -1;
  if (phx_report_format(payload, sizeof(payload), what, context.job_id, s, context.node, -1, NULL) < 0)
    snprintf(why, sizeof(why), "report too long");
  else
    rc = phx_report_signed(context.config.socket, context.config.munge_socket, context.config.timeout_ms, payload, why,
                           sizeof(why));
  if (rc == 0) {
    context.reported = 1;
    return;
  }
  if (rc == 1) {
    slurm_info("phalanx: phalanxd refused the report of job %u step %s %s (%s), the job runs", context.job_id, s, what,
               why);
    return;
  }
  slurm_info("phalanx: phalanxd not reachable at %s (%s): job %u step %s %s not reported, the job runs",
             context.config.socket, why, context.job_id, s, what);
}

/* This node's name: slurmstepd has no item for it and SLURMD_NODENAME reaches only the tasks, so
 * the S_JOB_NODEID-th name of the step's (or the batch step's: the job's) node list. */
static void node_name(spank_t sp) {
  char list[4096];
  uint32_t id = 0;
  context.node[0] = '\0';
  if (spank_get_item(sp, S_JOB_NODEID, &id) != ESPANK_SUCCESS) return;
  if (spank_getenv(sp, "SLURM_STEP_NODELIST", list, sizeof(list)) != ESPANK_SUCCESS &&
      spank_getenv(sp, "SLURM_JOB_NODELIST", list, sizeof(list)) != ESPANK_SUCCESS)
    return;
  if (phx_hostlist_nth(list, id, context.node, sizeof(context.node)) < 0) context.node[0] = '\0';
}

/* A managed job's CUDA_VISIBLE_DEVICES along the best ring of the node's gpu_topology= (ring.h);
 * a failure is one line and leaves Slurm's order. */
static void order_gpus(spank_t sp) {
  static char matrix[65536];
  char visible[1024], gpus[1024], out[1024], err[256];
  size_t n;
  FILE* f;
  if (context.config.gpu_topology[0] == '\0' || !phx_args_managed()) return;
  if (spank_getenv(sp, "CUDA_VISIBLE_DEVICES", visible, sizeof(visible)) != ESPANK_SUCCESS) return;
  if (spank_getenv(sp, "SLURM_STEP_GPUS", gpus, sizeof(gpus)) != ESPANK_SUCCESS &&
      spank_getenv(sp, "SLURM_JOB_GPUS", gpus, sizeof(gpus)) != ESPANK_SUCCESS)
    gpus[0] = '\0';
  if ((f = fopen(context.config.gpu_topology, "r")) == NULL) {
    slurm_info("phalanx: gpu_topology=%s: %m; job %u keeps Slurm's GPU order", context.config.gpu_topology,
               context.job_id);
    return;
  }
  n = fread(matrix, 1, sizeof(matrix) - 1, f);
  fclose(f);
  matrix[n] = '\0';
  if (phx_ring_order(matrix, visible, gpus, out, sizeof(out), err, sizeof(err)) < 0) {
    slurm_info("phalanx: %s (%s); job %u keeps Slurm's GPU order", err, context.config.gpu_topology, context.job_id);
    return;
  }
  if (strcmp(out, visible) != 0) set_env(sp, "CUDA_VISIBLE_DEVICES", out);
}

int phx_slurmstepd_user_init(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  if (spank_get_item(sp, S_JOB_ID, &context.job_id) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &context.step_id) != ESPANK_SUCCESS) {
    slurm_error("phalanx: cannot read the job and step ids");
    return -1;
  }
  if (export_env(sp) < 0) return -1;
  node_name(sp);
  order_gpus(sp);
  if (phx_args_managed() && context.config.report) report("start");
  return 0;
}

int phx_slurmstepd_task_init(spank_t sp, int ac, char** av) {
  char buf[16];
  uint32_t restarts = restart_count(sp);
  (void)ac;
  (void)av;
  snprintf(buf, sizeof(buf), "%u", restarts);
  if (set_env(sp, "PHALANX_RESTART_COUNT", buf) < 0) return -1;
  return set_env(sp, "PHALANX_RESUME", restarts > 0 ? "1" : "0");
}

int phx_slurmstepd_exit(spank_t sp, int ac, char** av) {
  (void)sp;
  (void)ac;
  (void)av;
  /* The end is reported only to a phalanxd that took the start: a down phalanxd costs one
   * timeout and one log line per step, not two. */
  if (context.reported) {
    context.reported = 0;
    report("end");
  }
  phx_args_reset();
  memset(&context, 0, sizeof(context));
  return 0;
}
