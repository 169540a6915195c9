#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int phx_report_step(const char* socket_path, int timeout_ms, char* why, size_t whylen) {
  struct sockaddr_un addr;
  struct pollfd pfd;
  long long deadline;
  socklen_t len = sizeof(int);
  int fd = -1, rc, soerr = 0, ret = -1;

  memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  if (socket_path == NULL || strlen(socket_path) >= sizeof(addr.sun_path)) {
    snprintf(why, whylen, "socket path too long");
    goto out;
  }
  strcpy(addr.sun_path, socket_path);
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    snprintf(why, whylen, "socket: %s", strerror(errno));
    goto out;
  }
  /* Non-blocking: a listener with a full backlog answers EAGAIN at once; a slow one is polled
   * until the deadline. */
  deadline = now_ms() + timeout_ms;
  for (;;) {
    rc = connect(fd, (struct sockaddr*)&addr, sizeof(addr));
    if (rc == 0) break;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EINPROGRESS) {
      snprintf(why, whylen, "%s", strerror(errno));
      goto out;
    }
    if (errno == EINPROGRESS) {
      long long left = deadline - now_ms();
      pfd.fd = fd;
      pfd.events = POLLOUT;
      rc = left > 0 ? poll(&pfd, 1, (int)left) : 0;
      if (rc < 0 && errno == EINTR) continue;
      if (rc <= 0) {
        snprintf(why, whylen, "timed out after %d ms", timeout_ms);
        goto out;
      }
      if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0 || soerr != 0) {
        snprintf(why, whylen, "%s", strerror(soerr ? soerr : errno));
        goto out;
      }
      break;
    }
    /* EAGAIN: backlog full; retry briefly until the deadline. */
    if (now_ms() >= deadline) {
      snprintf(why, whylen, "timed out after %d ms (backlog full)", timeout_ms);
      goto out;
    }
    usleep(10000);
  }
  ret = 0;
out:
  if (fd >= 0) close(fd);
  return ret;
}
