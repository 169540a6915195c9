/* The MUNGE credential of a step report (report.h): munged (at `munge_socket`, NULL or "" for
 * libmunge's default) encodes `payload` with the calling process's uid and gid. Built over
 * libmunge where libmunge-dev was found (PHX_HAVE_MUNGE); elsewhere it always fails ("built
 * without libmunge"). The time it takes is munged's (a local round trip), not bounded by the
 * report's timeout_ms. Thread-safety: reentrant. */
#ifndef PHALANX_SPANK_SIGNED_REPORT_H
#define PHALANX_SPANK_SIGNED_REPORT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 0 and *cred (free() it), or -1 and `why` (whylen bytes). */
int phx_munge_encode(const char* munge_socket, const char* payload, char** cred, char* why, size_t whylen);

/* One signed report: phx_munge_encode(payload), then report.h's phx_report_send. The same
 * returns as phx_report_send (0 ok, 1 refused, -1 not reported), a MUNGE failure is -1 with
 * "MUNGE: ..." in `why`. */
int phx_report_signed(const char* socket_path, const char* munge_socket, int timeout_ms, const char* payload, char* why,
                      size_t whylen);

#ifdef __cplusplus
}
#endif

#endif /* PHALANX_SPANK_SIGNED_REPORT_H */
