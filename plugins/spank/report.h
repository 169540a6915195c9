/* Step reports to phalanxd, bounded in time: whatever phalanxd does (absent, refusing, slow,
 * hung), phx_report_step returns within about timeout_ms and never signals or exits.
 *
 * Today a report is a connection to phalanxd's Unix socket, opened and closed: it tells whether
 * phalanxd can be reached. The message itself (step start/end over the Slurm-mode RPC) is the
 * next step of issue 11 (docs/slurm.md); its time bound and failure handling are these.
 * No Slurm calls: the caller logs `why`. Thread-safety: reentrant. */
#ifndef PHALANX_SPANK_REPORT_H
#define PHALANX_SPANK_REPORT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 0: phalanxd accepted the connection within timeout_ms. -1: it did not; `why` (whylen bytes)
 * says why in a few words ("No such file or directory", "timed out after 200 ms"). */
int phx_report_step(const char* socket_path, int timeout_ms, char* why, size_t whylen);

#ifdef __cplusplus
}
#endif

#endif /* PHALANX_SPANK_REPORT_H */
