#include "service/unix_listener.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/log.h"
#include "util/numbers.h"

namespace phalanx::service {
namespace {

std::string Errno(std::string_view what) { return std::string(what) + ": " + std::strerror(errno); }

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

void PeerRegistry::Add(int fd, PeerCred cred, ino_t inode) {
  MutexLock lock(&mu_);
  by_fd_[fd] = Entry{cred, inode};
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
  return it->second.cred;
}

UnixListener::UnixListener(std::string path, PeerRegistry* registry) : path_(std::move(path)), registry_(registry) {}

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
  thread_ = std::thread([this] { AcceptLoop(); });
  return {};
}

void UnixListener::AcceptLoop() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      PHX_LOG(kError) << "users' socket " << path_ << ": " << Errno("poll");
      return;
    }
    if (fds[1].revents != 0) return;
    // gRPC's endpoints need non-blocking fds.
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED)
        PHX_LOG(kWarn) << "users' socket " << path_ << ": " << Errno("accept");
      continue;
    }
    ucred cred{};
    socklen_t len = sizeof cred;
    struct stat st {};
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || fstat(fd, &st) != 0) {
      PHX_LOG(kWarn) << "users' socket: " << Errno("SO_PEERCRED") << "; connection refused";
      close(fd);
      continue;
    }
    registry_->Add(fd, PeerCred{cred.uid, cred.gid, cred.pid}, st.st_ino);
    ++accepted_;
    PHX_LOG(kDebug) << "connection fd:" << fd << " from uid " << cred.uid << " pid " << cred.pid;
    on_connection_(fd);
  }
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
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    listen_fd_ = -1;
    unlink(path_.c_str());
  }
}

}  // namespace phalanx::service
