#include "signed_report.h"

#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PHX_HAVE_MUNGE
#include <munge.h>

int phx_munge_encode(const char* munge_socket, const char* payload, char** cred, char* why, size_t whylen) {
  munge_ctx_t ctx = munge_ctx_create();
  munge_err_t e;
  *cred = NULL;
  if (ctx == NULL) {
    snprintf(why, whylen, "munge_ctx_create failed");
    return -1;
  }
  if (munge_socket != NULL && munge_socket[0] != '\0' &&
      (e = munge_ctx_set(ctx, MUNGE_OPT_SOCKET, munge_socket)) != EMUNGE_SUCCESS) {
    snprintf(why, whylen, "munge socket %s: %s", munge_socket, munge_ctx_strerror(ctx));
    munge_ctx_destroy(ctx);
    return -1;
  }
  e = munge_encode(cred, ctx, payload, (int)strlen(payload));
  if (e != EMUNGE_SUCCESS) {
    snprintf(why, whylen, "munge_encode: %s", munge_ctx_strerror(ctx) ? munge_ctx_strerror(ctx) : munge_strerror(e));
    munge_ctx_destroy(ctx);
    *cred = NULL;
    return -1;
  }
  munge_ctx_destroy(ctx);
  return 0;
}

#else

int phx_munge_encode(const char* munge_socket, const char* payload, char** cred, char* why, size_t whylen) {
  (void)munge_socket;
  (void)payload;
  *cred = NULL;
  snprintf(why, whylen, "built without libmunge");
  return -1;
}

#endif

int phx_report_signed(const char* socket_path, const char* munge_socket, int timeout_ms, const char* payload, char* why,
                      size_t whylen) {
  char* cred = NULL;
  char mwhy[200];
  int rc;
  if (phx_munge_encode(munge_socket, payload, &cred, mwhy, sizeof(mwhy)) < 0) {
    snprintf(why, whylen, "MUNGE: %s", mwhy);
    return -1;
  }
  rc = phx_report_send(socket_path, timeout_ms, cred, why, whylen);
  free(cred);
  return rc;
}
