// Daemon: phalanxd assembled. Start() loads the topology, opens (and locks) the store, recovers
// the core, starts the group committer, the io thread that owns the Controller, the gRPC
// servers (users on the Unix socket, agents on TCP when configured) and the HTTP endpoint
// (when configured). Stop() takes it down in the order that lets every in-flight call finish.
//
// Threads: the io thread (the core, every Controller and AgentExecutor call, timers, HTTP);
// gRPC's threads (they only post to the io thread); the committer's writer; the Unix socket's
// accept thread.
// See docs/daemon.md.
// Thread-safety: Start/Stop/Wait from one controlling thread; RequestStop from any thread;
// RunOnIo from any thread except the io thread.
#pragma once

#include <grpcpp/server.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "service/clock.h"
#include "service/daemon_config.h"
#include "service/store_space.h"
#include "util/thread_annotations.h"

namespace phalanx::service {

class Controller;
class Identity;
class PeerRegistry;
class UnixListener;
class JobsService;
class ClusterService;
class AgentsService;

// What Start fails with when a standby (waiting on the store's lease) was stopped by a signal:
// not an error (phalanxd exits 0).
inline constexpr std::string_view kStoppedInStandby = "stopped while standing by (signal)";

class Daemon {
 public:
  struct Options {
    const Clock* clock = nullptr;  // null: the system clock
    bool handle_signals = false;   // SIGINT/SIGTERM request a stop (the program, not tests)
    // The store's free space (store.min_free): null reads statvfs; tests inject a reader.
    StoreSpace::Reader store_free_bytes;
    double store_space_cache_s = 1;  // a reading is reused this long
  };

  // Fails with an Error naming what could not be set up (topology file:line, store file,
  // changed topology, socket, listener address, token file, ...); nothing is left running.
  static Result<std::unique_ptr<Daemon>> Start(const DaemonConfig& config, Options options);
  ~Daemon();  // Stop()
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Blocks until RequestStop (a signal, or a fatal store error); returns the fatal error, if any.
  std::optional<std::string> Wait() PHALANX_EXCLUDES(mu_);
  void RequestStop(std::string fatal = {}) PHALANX_EXCLUDES(mu_);
  // Orderly shutdown; idempotent.
  void Stop();

  int agent_port() const { return agent_port_; }
  int users_tcp_port() const { return users_tcp_port_; }  // users_tcp.listen's port; 0: off
  int http_port() const;
  const DaemonConfig& config() const { return config_; }
  // The users' socket's counters (user_limits, docs/daemon.md); safe from any thread after Start.
  struct UserSocketStats {
    uint64_t accepted = 0, refused_connections = 0, refused_requests = 0, idle_closed = 0, out_of_fds = 0;
    size_t open = 0;  // connections counted as open now
  };
  UserSocketStats user_socket_stats() const;
  // Runs `fn` on the io thread and waits (tests inspect the Controller with it).
  void RunOnIo(const std::function<void(Controller&)>& fn);

 private:
  explicit Daemon(DaemonConfig config);
  struct Parts;

  const DaemonConfig config_;
  std::unique_ptr<Parts> parts_;
  int agent_port_ = 0;
  int users_tcp_port_ = 0;
  bool stopped_ = false;
  Mutex mu_;
  CondVar cv_{&mu_};
  bool stop_requested_ PHALANX_GUARDED_BY(mu_) = false;
  std::optional<std::string> fatal_ PHALANX_GUARDED_BY(mu_);
};

}  // namespace phalanx::service
