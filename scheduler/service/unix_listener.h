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
#include "util/thread_annotations.h"

namespace phalanx::service {

struct PeerCred {
  uint32_t uid = 0, gid = 0;
  int32_t pid = 0;
};

class PeerRegistry {
 public:
  void Add(int fd, PeerCred cred, ino_t inode) PHALANX_EXCLUDES(mu_);
  // `peer` is ServerContext::peer(): "fd:N". nullopt for any other peer, an unknown fd, or an
  // fd that is no longer the socket that was registered.
  std::optional<PeerCred> Lookup(std::string_view peer) const PHALANX_EXCLUDES(mu_);

 private:
  struct Entry {
    PeerCred cred;
    ino_t inode = 0;
  };
  mutable Mutex mu_;
  std::unordered_map<int, Entry> by_fd_ PHALANX_GUARDED_BY(mu_);
};

class UnixListener {
 public:
  using OnConnection = std::function<void(int fd)>;  // takes ownership of the fd

  UnixListener(std::string path, PeerRegistry* registry);
  ~UnixListener();  // Stop()
  UnixListener(const UnixListener&) = delete;
  UnixListener& operator=(const UnixListener&) = delete;

  // Binds and listens (errors name the path), then starts the accept thread.
  Status Start(OnConnection on_connection);
  // Stops accepting, joins the thread, removes the socket file. Idempotent.
  void Stop();
  uint64_t accepted() const { return accepted_; }

 private:
  void AcceptLoop();

  const std::string path_;
  PeerRegistry* const registry_;
  OnConnection on_connection_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  std::thread thread_;
  std::atomic<uint64_t> accepted_{0};
};

}  // namespace phalanx::service
