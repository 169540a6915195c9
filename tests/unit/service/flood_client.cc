// A hostile or an ordinary user of the users' socket, for the flood test (daemon_flood_test.cc)
// and bench/dos_flood.sh. The test forks, setuid()s to the user and execs this.
//   flood SOCKET IDLE SECONDS THREADS: THREADS channels make a first call, then IDLE raw
//     connections are opened and left idle, then every thread calls Jobs.List in a loop for
//     SECONDS. Prints "calls=N ok=N exhausted=N other=N idle_open=N idle_closed=N" and the first
//     RESOURCE_EXHAUSTED message on a second line.
//   probe SOCKET COUNT [DEADLINE_MS]: COUNT Jobs.List calls, each on a new connection (as `gq`
//     makes) with a deadline (default 20 s), one after another. Prints "ok=N failed=N p50_ms=X p99_ms=X max_ms=X" and
//     the first failure. Exit status 0 when every call succeeded.
#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "phalanx/v1/phalanx.grpc.pb.h"

namespace {

namespace v1 = phalanx::v1;
using Clock = std::chrono::steady_clock;

grpc::Status List(v1::Jobs::Stub& stub, int deadline_ms = 20000) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms));
  v1::ListJobsRequest req;
  v1::ListJobsResponse resp;
  return stub.List(&ctx, req, &resp);
}

// A connection that stays idle. Non-blocking, so that a daemon that stopped accepting (its
// backlog full) does not hang the flood: a full backlog is retried for up to 2 s, once; after
// that each attempt is tried once.
int RawConnect(const std::string& path, bool* stuck) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  const auto give_up = Clock::now() + std::chrono::seconds(*stuck ? 0 : 2);
  while (true) {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
    const int err = errno;
    close(fd);
    if (err != EAGAIN) return -1;
    if (Clock::now() >= give_up) {
      *stuck = true;
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

int Flood(const std::string& socket, int idle, double seconds, int threads) {
  // Room for the idle connections.
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);

  std::vector<std::unique_ptr<v1::Jobs::Stub>> stubs;
  for (int i = 0; i < threads; ++i) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection per channel
    auto ch = grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(), args);
    stubs.push_back(v1::Jobs::NewStub(ch));
    (void)List(*stubs.back());
  }
  std::vector<int> fds;
  bool stuck = false;
  for (int i = 0; i < idle; ++i) {
    const int fd = RawConnect(socket, &stuck);
    if (fd >= 0) fds.push_back(fd);
  }
  std::atomic<uint64_t> calls{0}, ok{0}, exhausted{0}, other{0};
  std::mutex mu;
  std::string first_exhausted, first_other;
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      while (Clock::now() < end) {
        const grpc::Status st = List(*stubs[t]);
        ++calls;
        if (st.ok()) {
          ++ok;
        } else if (st.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
          ++exhausted;
          std::lock_guard<std::mutex> lock(mu);
          if (first_exhausted.empty()) first_exhausted = st.error_message();
        } else {
          ++other;
          std::lock_guard<std::mutex> lock(mu);
          if (first_other.empty()) first_other = std::to_string(st.error_code()) + " " + st.error_message();
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  // Which idle connections the daemon closed (EOF or reset) and which are still open.
  int open = 0, closed = 0;
  for (int fd : fds) {
    pollfd p{fd, POLLIN, 0};
    char c;
    const bool ended = poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR) || recv(fd, &c, 1, MSG_DONTWAIT) <= 0);
    (ended ? closed : open) += 1;
  }
  std::cout << "calls=" << calls << " ok=" << ok << " exhausted=" << exhausted << " other=" << other
            << " idle_open=" << open << " idle_closed=" << closed + (idle - static_cast<int>(fds.size())) << "\n"
            << "exhausted: " << first_exhausted << "\n"
            << "other: " << first_other << "\n";
  for (int fd : fds) close(fd);
  return 0;
}

int Probe(const std::string& socket, int count, int deadline_ms) {
  std::vector<double> ms;
  int failed = 0;
  std::string first_failure;
  for (int i = 0; i < count; ++i) {
    const auto t0 = Clock::now();
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto ch = grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(), args);
    auto stub = v1::Jobs::NewStub(ch);
    const grpc::Status st = List(*stub, deadline_ms);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (!st.ok()) {
      ++failed;
      if (first_failure.empty()) first_failure = std::to_string(st.error_code()) + " " + st.error_message();
    }
  }
  std::sort(ms.begin(), ms.end());
  const auto at = [&](double q) { return ms.empty() ? 0 : ms[std::min(ms.size() - 1, size_t(q * ms.size()))]; };
  std::printf("ok=%d failed=%d p50_ms=%.1f p99_ms=%.1f max_ms=%.1f\n", count - failed, failed, at(0.5), at(0.99),
              ms.empty() ? 0 : ms.back());
  if (!first_failure.empty()) std::printf("failure: %s\n", first_failure.c_str());
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> a(argv, argv + argc);
  if (argc == 6 && a[1] == "flood") return Flood(a[2], std::stoi(a[3]), std::stod(a[4]), std::stoi(a[5]));
  if ((argc == 4 || argc == 5) && a[1] == "probe")
    return Probe(a[2], std::stoi(a[3]), argc == 5 ? std::stoi(a[4]) : 20000);
  std::cerr << "usage: flood_client flood SOCKET IDLE SECONDS THREADS | probe SOCKET COUNT [DEADLINE_MS]\n";
  return 2;
}
