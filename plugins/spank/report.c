#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
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

/* The address of `target`: an absolute path (a Unix socket) or HOST:PORT (TCP; HOST a numeric
 * address or a name the resolver answers at once, e.g. from /etc/hosts; [v6]:PORT). 0 or -1. */
static int resolve(const char* target, struct sockaddr_storage* addr, socklen_t* alen, char* why, size_t whylen) {
  memset(addr, 0, sizeof(*addr));
  if (target != NULL && target[0] == '/') {
    struct sockaddr_un* un = (struct sockaddr_un*)addr;
    if (strlen(target) >= sizeof(un->sun_path)) {
      snprintf(why, whylen, "socket path too long");
      return -1;
    }
    un->sun_family = AF_UNIX;
    strcpy(un->sun_path, target);
    *alen = sizeof(*un);
    return 0;
  }
  {
    char host[256];
    const char *colon = target ? strrchr(target, ':') : NULL, *h = target;
    size_t hlen;
    struct addrinfo hints, *res = NULL;
    int rc;
    if (colon == NULL || colon == target || colon[1] == '\0') {
      snprintf(why, whylen, "'%s' is neither an absolute path nor HOST:PORT", target ? target : "");
      return -1;
    }
    hlen = (size_t)(colon - target);
    if (h[0] == '[' && hlen > 2 && h[hlen - 1] == ']') {
      ++h;
      hlen -= 2;
    }
    if (hlen >= sizeof(host)) {
      snprintf(why, whylen, "host name too long");
      return -1;
    }
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    if ((rc = getaddrinfo(host, colon + 1, &hints, &res)) != 0 || res == NULL) {
      snprintf(why, whylen, "%s: %s", target, rc ? gai_strerror(rc) : "no address");
      return -1;
    }
    memcpy(addr, res->ai_addr, res->ai_addrlen);
    *alen = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
  }
}

/* A connected socket within the deadline, or -1 with `why`. */
static int connect_bounded(const char* target, int timeout_ms, long long deadline, char* why, size_t whylen) {
  struct sockaddr_storage addr;
  socklen_t alen = 0;
  struct pollfd pfd;
  socklen_t len = sizeof(int);
  int fd = -1, rc, soerr = 0;

  if (resolve(target, &addr, &alen, why, whylen) < 0) goto out;
  fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    snprintf(why, whylen, "socket: %s", strerror(errno));
    goto out;
  }
  /* Non-blocking: a listener with a full backlog answers EAGAIN at once; a slow one is polled
   * until the deadline. */
  for (;;) {
    rc = connect(fd, (struct sockaddr*)&addr, alen);
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
  return fd;
out:
  if (fd >= 0) close(fd);
  return -1;
}

int phx_report_step(const char* socket_path, int timeout_ms, char* why, size_t whylen) {
  int fd = connect_bounded(socket_path, timeout_ms, now_ms() + timeout_ms, why, whylen);
  if (fd < 0) return -1;
  close(fd);
  return 0;
}

/* Waits for `events` on fd until the deadline: 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, long long deadline) {
  struct pollfd pfd;
  for (;;) {
    long long left = deadline - now_ms();
    int rc;
    if (left <= 0) return 0;
    pfd.fd = fd;
    pfd.events = events;
    rc = poll(&pfd, 1, (int)left);
    if (rc < 0 && errno == EINTR) continue;
    return rc < 0 ? -1 : rc > 0;
  }
}

int phx_report_send(const char* socket_path, int timeout_ms, const char* line, char* why, size_t whylen) {
  const long long deadline = now_ms() + timeout_ms;
  char answer[512];
  size_t sent = 0, total = strlen(line), got = 0;
  int fd = connect_bounded(socket_path, timeout_ms, deadline, why, whylen), ret = -1, w;
  if (fd < 0) return -1;
  while (sent <= total) { /* the line, then its '\n' */
    const char* p = sent < total ? line + sent : "\n";
    size_t n = sent < total ? total - sent : 1;
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno == EAGAIN) {
      if ((w = wait_fd(fd, POLLOUT, deadline)) > 0) continue;
      if (w == 0) snprintf(why, whylen, "timed out after %d ms (sending)", timeout_ms);
      else snprintf(why, whylen, "poll: %s", strerror(errno));
      goto out;
    }
    if (k < 0) {
      snprintf(why, whylen, "send: %s", strerror(errno));
      goto out;
    }
    sent += (size_t)k;
  }
  /* One line, up to '\n' (or EOF, or a full buffer). */
  for (;;) {
    ssize_t k;
    if ((w = wait_fd(fd, POLLIN, deadline)) <= 0) {
      if (w == 0) snprintf(why, whylen, "timed out after %d ms (no answer)", timeout_ms);
      else snprintf(why, whylen, "poll: %s", strerror(errno));
      goto out;
    }
    k = recv(fd, answer + got, sizeof(answer) - 1 - got, 0);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k < 0) {
      snprintf(why, whylen, "recv: %s", strerror(errno));
      goto out;
    }
    got += (size_t)k;
    answer[got] = '\0';
    if (memchr(answer, '\n', got) != NULL || got == sizeof(answer) - 1) break;
    if (k == 0) {
      snprintf(why, whylen, got == 0 ? "closed without an answer" : "closed in the middle of its answer");
      goto out;
    }
  }
  answer[strcspn(answer, "\n")] = '\0';
  if (strcmp(answer, "ok") == 0) {
    ret = 0;
  } else if (strncmp(answer, "refused: ", 9) == 0) {
    snprintf(why, whylen, "%s", answer + 9);
    ret = 1;
  } else {
    snprintf(why, whylen, "unexpected answer '%.100s'", answer);
  }
out:
  close(fd);
  return ret;
}

/* One `key=value` line appended at *pos; -1 when it does not fit or value holds a newline. */
static int put(char* out, size_t outlen, size_t* pos, const char* key, const char* value) {
  int n;
  if (strchr(value, '\n') != NULL) return -1;
  n = snprintf(out + *pos, outlen - *pos, "%s=%s\n", key, value);
  if (n < 0 || (size_t)n >= outlen - *pos) return -1;
  *pos += (size_t)n;
  return 0;
}

int phx_report_format(char* out, size_t outlen, const char* kind, unsigned job, const char* step, const char* node,
                      long long epoch, const char* path) {
  size_t pos = 0;
  char num[32];
  int ckpt = strcmp(kind, "checkpoint") == 0;
  if (outlen == 0) return -1;
  out[0] = '\0';
  pos = (size_t)snprintf(out, outlen, "phalanx-step-report/1\n");
  if (pos >= outlen) return -1;
  if (put(out, outlen, &pos, "kind", kind) < 0) return -1;
  snprintf(num, sizeof(num), "%u", job);
  if (put(out, outlen, &pos, "job", num) < 0) return -1;
  if (step != NULL && step[0] != '\0' && put(out, outlen, &pos, "step", step) < 0) return -1;
  if (node != NULL && node[0] != '\0' && put(out, outlen, &pos, "node", node) < 0) return -1;
  if (ckpt && epoch >= 0) {
    snprintf(num, sizeof(num), "%lld", epoch);
    if (put(out, outlen, &pos, "epoch", num) < 0) return -1;
  }
  if (ckpt && path != NULL && path[0] != '\0' && put(out, outlen, &pos, "path", path) < 0) return -1;
  return 0;
}
