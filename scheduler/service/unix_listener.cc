#include "service/unix_listener.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "util/log.h"
#include "util/numbers.h"

namespace phalanx::service {
namespace {

std::string Errno(std::string_view what) { return std::string(what) + ": " + std::strerror(errno); }

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// mkdir -p, each created directory 0755.
Status MakeDirs(const std::string& dir) {
  if (dir.empty()) return {};
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    const std::string part = dir.substr(0, pos);
    if (mkdir(part.c_str(), 0755) == 0) {
      (void)chmod(part.c_str(), 0755);  // whatever the umask: every user must reach the socket
    } else if (errno != EEXIST) {
      return Fail(part, Errno("cannot create the directory"));
    }
  }
  return {};
}

}  // namespace

PeerRegistry::Admission PeerRegistry::Admit(int fd, PeerCred cred, ino_t inode, double now_s,
                                            const UserLimits& limits) {
  MutexLock lock(&mu_);
  // The old entry at this fd belongs to a connection gRPC closed (the kernel reused its number).
  if (auto it = by_fd_.find(fd); it != by_fd_.end()) EraseLocked(it);
  if (!limits.Exempt(cred.uid)) {
    const auto open = open_by_uid_.find(cred.uid);
    if (limits.max_connections_per_uid > 0 && open != open_by_uid_.end() &&
        open->second >= limits.max_connections_per_uid)
      return Admission::kUidFull;
    if (limits.max_connections > 0 && by_fd_.size() >= limits.max_connections) return Admission::kAllFull;
  }
  by_fd_[fd] = Entry{cred, inode, now_s, false};
  ++open_by_uid_[cred.uid];
  return Admission::kAdmitted;
}

void PeerRegistry::Add(int fd, PeerCred cred, ino_t inode) {
  UserLimits none;
  none.max_connections = none.max_connections_per_uid = 0;
  (void)Admit(fd, cred, inode, 0, none);
}

void PeerRegistry::EraseLocked(std::unordered_map<int, Entry>::iterator it) {
  auto n = open_by_uid_.find(it->second.cred.uid);
  if (n != open_by_uid_.end() && --n->second == 0) open_by_uid_.erase(n);
  by_fd_.erase(it);
}

std::optional<PeerCred> PeerRegistry::Lookup(std::string_view peer) const {
  if (!peer.starts_with("fd:")) return std::nullopt;
  const auto parsed = ParseNumber<int>(peer.substr(3));
  if (!parsed || *parsed < 0) return std::nullopt;
  const int fd = *parsed;
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return std::nullopt;
  MutexLock lock(&mu_);
  auto it = by_fd_.find(fd);
  if (it == by_fd_.end() || it->second.inode != st.st_ino) return std::nullopt;
  it->second.called = true;
  return it->second.cred;
}

PeerRegistry::Swept PeerRegistry::Sweep(double now_s, double idle_timeout_s, const UserLimits& limits) {
  Swept out;
  MutexLock lock(&mu_);
  for (auto it = by_fd_.begin(); it != by_fd_.end();) {
    struct stat st {};
    const int fd = it->first;
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_ino != it->second.inode) {
      ++out.closed;
      auto next = std::next(it);
      EraseLocked(it);
      it = next;
      continue;
    }
    if (idle_timeout_s > 0 && !it->second.called && now_s - it->second.accepted_s >= idle_timeout_s &&
        !limits.Exempt(it->second.cred.uid)) {
      // gRPC owns the fd: shut the socket down (both ways) so that gRPC sees the end and closes
      // it. The inode was checked just above; a connection that made no call is closed by gRPC
      // only when its client goes, so the number cannot have been reused in between short of
      // that client leaving in the microseconds between fstat and shutdown.
      (void)shutdown(fd, SHUT_RDWR);
      ++out.idle;
      auto next = std::next(it);
      EraseLocked(it);
      it = next;
      continue;
    }
    ++it;
  }
  return out;
}

size_t PeerRegistry::open() const {
  MutexLock lock(&mu_);
  return by_fd_.size();
}

uint32_t PeerRegistry::open(uint32_t uid) const {
  MutexLock lock(&mu_);
  auto it = open_by_uid_.find(uid);
  return it == open_by_uid_.end() ? 0 : it->second;
}

UnixListener::UnixListener(std::string path, PeerRegistry* registry, UserLimits limits)
    : path_(std::move(path)), registry_(registry), limits_(std::move(limits)) {}

UnixListener::~UnixListener() { Stop(); }

Status UnixListener::Start(OnConnection on_connection) {
  on_connection_ = std::move(on_connection);
  sockaddr_un addr{};
  if (path_.size() >= sizeof(addr.sun_path)) return Fail(path_, "socket path too long");
  const size_t slash = path_.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    if (auto st = MakeDirs(path_.substr(0, slash)); !st) return st;
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  // A socket file left by a daemon that died is replaced; one that answers is another daemon's.
  struct stat st {};
  if (lstat(path_.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) return Fail(path_, "exists and is not a socket");
    const int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool live = probe >= 0 && connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    if (probe >= 0) close(probe);
    if (live) return Fail(path_, "another daemon is listening on this socket");
    unlink(path_.c_str());
  }
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return Fail(path_, Errno("socket"));
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    Status st = Fail(path_, Errno("bind"));
    close(listen_fd_);
    listen_fd_ = -1;
    return st;
  }
  if (chmod(path_.c_str(), 0666) != 0 || listen(listen_fd_, 128) != 0) {
    Status st = Fail(path_, Errno("chmod/listen"));
    close(listen_fd_);
    listen_fd_ = -1;
    unlink(path_.c_str());
    return st;
  }
  if (pipe2(wake_, O_CLOEXEC) != 0) return Fail(path_, Errno("pipe"));
  reserve_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
  thread_ = std::thread([this] { AcceptLoop(); });
  return {};
}

bool UnixListener::WaitWake(int ms) {
  pollfd wake{wake_[0], POLLIN, 0};
  return poll(&wake, 1, ms) > 0 && wake.revents != 0;
}

void UnixListener::Tick(double now_s, bool force) {
  // Every second, or sooner (at most every 100 ms) when a limit is about to refuse someone.
  if (now_s - last_sweep_s_ < (force ? 0.1 : 1.0)) return;
  last_sweep_s_ = now_s;
  const auto swept = registry_->Sweep(now_s, limits_.idle_timeout_s, limits_);
  idle_closed_ += swept.idle;
  if (swept.idle > 0)
    PHX_LOG(kDebug) << "users' socket: " << swept.idle << " connections closed after " << limits_.idle_timeout_s
                    << " s without a call";
  log_.FlushToLog();
}

void UnixListener::AcceptLoop() {
  int backoff_ms = 0;
  while (true) {
    if (backoff_ms > 0) {
      if (WaitWake(backoff_ms)) return;
    }
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    const int ready = poll(fds, 2, 1000);
    if (ready < 0) {
      if (errno == EINTR) continue;
      PHX_LOG(kError) << "users' socket " << path_ << ": " << Errno("poll") << "; no longer accepting";
      return;
    }
    if (fds[1].revents != 0) return;
    Tick(SteadySeconds(), false);
    if (fds[0].revents == 0) continue;
    if (AcceptOne()) {
      backoff_ms = 0;
    } else {
      backoff_ms = backoff_ms == 0 ? 10 : std::min(2 * backoff_ms, 1000);
    }
  }
}

bool UnixListener::AcceptOne() {
  // gRPC's endpoints need non-blocking fds.
  const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == EINTR || err == EAGAIN || err == ECONNABORTED || err == EPROTO) return true;
    if (err == EMFILE || err == ENFILE) {
      ++out_of_fds_;
      // The waiting connection would keep poll() ready forever: accept it with the reserve
      // descriptor and close it at once (the client sees its connection closed), then back off.
      if (reserve_fd_ >= 0) {
        close(reserve_fd_);
        const int dropped = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (dropped >= 0) close(dropped);
        reserve_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
      }
      log_.Log(LogLevel::kError, "accept:nofile",
               "users' socket " + path_ + ": accept: " + std::strerror(err) +
                   " (phalanxd is out of file descriptors; connections are closed until some are free)");
      Tick(SteadySeconds(), true);
      return false;
    }
    log_.Log(LogLevel::kWarn, "accept:" + std::to_string(err),
             "users' socket " + path_ + ": accept: " + std::strerror(err));
    return err != ENOBUFS && err != ENOMEM;
  }
  ucred cred{};
  socklen_t len = sizeof cred;
  struct stat st {};
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || fstat(fd, &st) != 0) {
    log_.Log(LogLevel::kWarn, "peercred", "users' socket: " + Errno("SO_PEERCRED") + "; connection refused");
    close(fd);
    return true;
  }
  const PeerCred peer{cred.uid, cred.gid, cred.pid};
  const double now = SteadySeconds();
  auto admission = registry_->Admit(fd, peer, st.st_ino, now, limits_);
  if (admission != PeerRegistry::Admission::kAdmitted) {
    Tick(now, true);  // connections gRPC closed since the last sweep no longer count
    admission = registry_->Admit(fd, peer, st.st_ino, now, limits_);
  }
  if (admission != PeerRegistry::Admission::kAdmitted) {
    ++refused_;
    const bool uid_full = admission == PeerRegistry::Admission::kUidFull;
    const std::string why =
        uid_full ? "uid " + std::to_string(cred.uid) + " has " + std::to_string(limits_.max_connections_per_uid) +
                       " connections open (user_limits.max_connections_per_uid)"
                 : std::to_string(limits_.max_connections) + " connections are open (user_limits.max_connections)";
    log_.Log(LogLevel::kWarn, uid_full ? "refused:uid:" + std::to_string(cred.uid) : "refused:all",
             "users' socket: connection from uid " + std::to_string(cred.uid) + " pid " + std::to_string(cred.pid) +
                 " closed: " + why);
    close(fd);
    return true;
  }
  ++accepted_;
  PHX_LOG(kDebug) << "connection fd:" << fd << " from uid " << cred.uid << " pid " << cred.pid;
  on_connection_(fd);
  return true;
}

void UnixListener::Stop() {
  if (thread_.joinable()) {
    const char c = 'x';
    (void)!write(wake_[1], &c, 1);
    thread_.join();
  }
  for (int& fd : wake_) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
  if (reserve_fd_ >= 0) {
    close(reserve_fd_);
    reserve_fd_ = -1;
  }
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    listen_fd_ = -1;
    unlink(path_.c_str());
  }
}

}  // namespace phalanx::service
