/* Step reports to phalanxd (docs/slurm.md, "Step reports"), bounded in time: whatever phalanxd
 * does (absent, refusing, slow, hung), phx_report_send returns within about timeout_ms and never
 * signals or exits.
 *
 * A report is one connection to phalanxd's report socket (its slurm.report_socket, or over TCP
 * its slurm.report_listen): the client
 * writes one MUNGE credential (phx_munge_encode, signed_report.h) holding the report's text
 * (phx_report_format) and '\n'; phalanxd answers "ok" or "refused: <why>" and closes. munged
 * gives the credential the sender's uid, which phalanxd checks against the job's owner.
 * No Slurm calls: the caller logs `why`. Thread-safety: reentrant. */
#ifndef PHALANX_SPANK_REPORT_H
#define PHALANX_SPANK_REPORT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The report's text, scheduler/service/step_report.h's format: kind "start", "end" or
 * "checkpoint"; step, node and path may be NULL or "" (left out); epoch < 0 (or any epoch or
 * path on a kind other than checkpoint) is left out. 0, or -1 when it does not fit in outlen or
 * a value holds a newline. */
int phx_report_format(char* out, size_t outlen, const char* kind, unsigned job, const char* step, const char* node,
                      long long epoch, const char* path);

/* `socket_path` here and below: phalanxd's report socket, an absolute path (Unix) or HOST:PORT
 * (TCP, its slurm.report_listen; HOST numeric or resolved at once, e.g. from /etc/hosts).
 * Sends `line` (no newline in it) and reads the answer, all within timeout_ms.
 * 0: phalanxd answered "ok". 1: it answered "refused: ..." (`why` holds its words after
 * "refused: "). -1: no answer: not reachable, timed out, closed early; `why` (whylen bytes)
 * says why in a few words ("No such file or directory", "timed out after 200 ms"). */
int phx_report_send(const char* socket_path, int timeout_ms, const char* line, char* why, size_t whylen);

/* Only connects (and closes) within timeout_ms: 0 when phalanxd accepted, else -1 and `why`. */
int phx_report_step(const char* socket_path, int timeout_ms, char* why, size_t whylen);

#ifdef __cplusplus
}
#endif

#endif /* PHALANX_SPANK_REPORT_H */
