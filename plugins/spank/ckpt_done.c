/* phalanx-ckpt-done [--epoch N] [--path P]: run inside a Slurm job step (or its batch script)
 * after a checkpoint is complete, so that phalanxd's Slurm mode goes on with a preemption
 * waiting for it at once instead of at the deadline (docs/slurm.md, "Step reports").
 *
 * It sends one MUNGE-signed checkpoint report (signed_report.h) for $SLURM_JOB_ID to the report socket
 * the SPANK plugin put into the step's environment: PHALANX_REPORT_SOCKET,
 * PHALANX_REPORT_TIMEOUT_MS (at least 1000 ms here: a job waits for it on purpose) and
 * PHALANX_MUNGE_SOCKET (empty: libmunge's default). The node is $SLURMD_NODENAME.
 * Without --epoch phalanxd numbers it (the one after the last).
 *
 * Exit status: 0 phalanxd took it; 1 refused or not reported (one line on stderr saying why);
 * 2 usage, or not in a job with the plugin's environment. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "signed_report.h"

static int usage(const char* why) {
  fprintf(stderr, "phalanx-ckpt-done: %s\nusage: phalanx-ckpt-done [--epoch N] [--path P]\n", why);
  return 2;
}

int main(int argc, char** argv) {
  long long epoch = -1;
  const char* path = NULL;
  const char *job_text = getenv("SLURM_JOB_ID"), *sock = getenv("PHALANX_REPORT_SOCKET");
  const char *munge_sock = getenv("PHALANX_MUNGE_SOCKET"), *tmo = getenv("PHALANX_REPORT_TIMEOUT_MS");
  char payload[8192], why[512], *end = NULL;
  unsigned long job;
  int timeout_ms = 1000, rc, i;

  for (i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--epoch") == 0 && i + 1 < argc) {
      errno = 0;
      epoch = strtoll(argv[++i], &end, 10);
      if (errno != 0 || *end != '\0' || argv[i][0] == '\0' || argv[i][0] == '-' || epoch < 0)
        return usage("--epoch: not a number >= 0");
    } else if (strcmp(argv[i], "--path") == 0 && i + 1 < argc) {
      path = argv[++i];
    } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      printf("usage: phalanx-ckpt-done [--epoch N] [--path P]\n");
      return 0;
    } else {
      fprintf(stderr, "phalanx-ckpt-done: unknown or incomplete argument '%s'\n", argv[i]);
      return usage("see docs/slurm.md");
    }
  }
  if (job_text == NULL || job_text[0] == '\0') return usage("not in a Slurm job ($SLURM_JOB_ID is not set)");
  errno = 0;
  job = strtoul(job_text, &end, 10);
  if (errno != 0 || *end != '\0' || job == 0 || job > 0xffffffffUL) return usage("$SLURM_JOB_ID is not a job id");
  if (sock == NULL || sock[0] == '\0')
    return usage("$PHALANX_REPORT_SOCKET is not set (the phalanx SPANK plugin sets it when report=true)");
  if (tmo != NULL && atoi(tmo) > timeout_ms) timeout_ms = atoi(tmo);
  if (timeout_ms > 10000) timeout_ms = 10000;
  if (phx_report_format(payload, sizeof(payload), "checkpoint", (unsigned)job, NULL, getenv("SLURMD_NODENAME"), epoch,
                        path) < 0)
    return usage("--path: too long or holds a newline");
  rc = phx_report_signed(sock, munge_sock, timeout_ms, payload, why, sizeof(why));
  if (rc == 0) return 0;
  fprintf(stderr, "phalanx-ckpt-done: job %lu: checkpoint %s: %s\n", job,
          rc == 1 ? "refused by phalanxd" : "not reported", why);
  return 1;
}
