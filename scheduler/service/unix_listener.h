// UnixListener: the users' socket. gRPC has no peer-credential API, so the daemon accepts
// connections itself: an accept thread takes each connection, reads SO_PEERCRED (uid, gid,
// pid, as the kernel recorded them at connect), records them in the PeerRegistry under the
// connection's fd, and hands the fd to gRPC (grpc::AddInsecureChannelFromFd). gRPC then names
// the connection "fd:N" in ServerContext::peer() (verified: tests/unit/service/peer_test.cc).
//
// Why the fd number identifies the connection: gRPC keeps the fd open while any call on the
// connection lives (the transport, which owns the endpoint, is referenced by every stream), so
// while a handler runs its "fd:N" cannot have been reused; a new connection that gets N was
// accepted after every call of the old one ended, and its entry replaced the old one before
// gRPC saw it. As a second check the registry records the socket's inode and Lookup compares it
// with fstat(N): an entry that does not belong to the socket now at N is refused.
//
// Limits (issue 12.1, service/user_limits.h): the accept thread counts each uid's open
// connections and closes a new one over max_connections_per_uid or max_connections before gRPC
// sees it (logged, rate-limited). A connection is counted until its fd no longer is its socket
// (gRPC closed it): Sweep() finds those, every second and before a refusal. A connection that has
// made no call within idle_timeout_s is shut down (shutdown(2); gRPC then closes it); one that
// has made calls is closed by gRPC's own idle timer (GRPC_ARG_MAX_CONNECTION_IDLE_MS, set by the
// daemon), which knows about calls still running (Watch). Out of descriptors (EMFILE/ENFILE),
// the thread closes a reserve descriptor to accept and close the waiting connection, then backs
// off (10 ms doubling to 1 s) instead of spinning; the error is logged a few times per 10 s with
// the count of the rest.
//
// The socket file gets mode 0666 (every local user may connect; identity comes from the kernel),
// inside a directory created 0755 if missing. A stale socket file is replaced; a live one (a
// daemon answers) is an error.
// Thread-safety: PeerRegistry is safe from any thread. UnixListener: Start/Stop from one thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "core/common/result.h"
#include "service/user_limits.h"
#include "util/rate_limited_log.h"
#include "util/thread_annotations.h"

namespace phalanx::service {

struct PeerCred {
  uint32_t uid = 0, gid = 0;
  int32_t pid = 0;
};

class PeerRegistry {
 public:
  enum class Admission { kAdmitted, kUidFull, kAllFull };
  struct Swept {
    size_t closed = 0;  // entries whose connection gRPC closed
    size_t idle = 0;    // connections shut down for making no call within the idle timeout
  };

  // Registers a connection (replacing whatever was at `fd`), unless `limits` refuse it: its
  // uid has max_connections_per_uid open, or max_connections are open. `now_s`: monotonic.
  Admission Admit(int fd, PeerCred cred, ino_t inode, double now_s, const UserLimits& limits) PHALANX_EXCLUDES(mu_);
  void Add(int fd, PeerCred cred, ino_t inode) PHALANX_EXCLUDES(mu_);
  // `peer` is ServerContext::peer(): "fd:N". nullopt for any other peer, an unknown fd, or an
  // fd that is no longer the socket that was registered. Marks the connection as having made a call.
  std::optional<PeerCred> Lookup(std::string_view peer) const PHALANX_EXCLUDES(mu_);
  // Forgets connections gRPC closed; shuts down those that made no call for `idle_timeout_s`
  // (> 0) since they were accepted, except exempt uids'.
  Swept Sweep(double now_s, double idle_timeout_s, const UserLimits& limits) PHALANX_EXCLUDES(mu_);

  size_t open() const PHALANX_EXCLUDES(mu_);
  uint32_t open(uint32_t uid) const PHALANX_EXCLUDES(mu_);

 private:
  struct Entry {
    PeerCred cred;
    ino_t inode = 0;
    double accepted_s = 0;
    mutable bool called = false;
  };
  void EraseLocked(std::unordered_map<int, Entry>::iterator it) PHALANX_REQUIRES(mu_);

  mutable Mutex mu_;
  std::unordered_map<int, Entry> by_fd_ PHALANX_GUARDED_BY(mu_);
  std::unordered_map<uint32_t, uint32_t> open_by_uid_ PHALANX_GUARDED_BY(mu_);
};

class UnixListener {
 public:
  using OnConnection = std::function<void(int fd)>;  // takes ownership of the fd

  UnixListener(std::string path, PeerRegistry* registry, UserLimits limits = {});
  ~UnixListener();  // Stop()
  UnixListener(const UnixListener&) = delete;
  UnixListener& operator=(const UnixListener&) = delete;

  // Binds and listens (errors name the path), then starts the accept thread.
  Status Start(OnConnection on_connection);
  // Stops accepting, joins the thread, removes the socket file. Idempotent.
  void Stop();
  uint64_t accepted() const { return accepted_; }
  uint64_t refused() const { return refused_; }          // over a connection limit
  uint64_t idle_closed() const { return idle_closed_; }  // no call within the idle timeout
  uint64_t out_of_fds() const { return out_of_fds_; }    // accept failed with EMFILE/ENFILE

 private:
  void AcceptLoop();
  // Accepts one connection; false when the thread should back off (out of descriptors).
  bool AcceptOne();
  void Tick(double now_s, bool force);
  // Waits up to `ms` for the wake pipe; true when Stop() rang it.
  bool WaitWake(int ms);

  const std::string path_;
  PeerRegistry* const registry_;
  const UserLimits limits_;
  OnConnection on_connection_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  int reserve_fd_ = -1;  // /dev/null, closed to accept (and drop) a connection when out of fds
  double last_sweep_s_ = 0;
  RateLimitedLog log_;
  std::thread thread_;
  std::atomic<uint64_t> accepted_{0}, refused_{0}, idle_closed_{0}, out_of_fds_{0};
};

}  // namespace phalanx::service
