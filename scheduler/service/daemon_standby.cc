// phalanxd's start on a shared store (docs/deployment.md, "High availability"): lead, or stand by.
#include "service/daemon_standby.h"

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>

#include "service/daemon.h"
#include "service/standby_gate.h"
#include "util/log.h"

namespace phalanx::service {

namespace {

// "the leader is HOLDER (epoch N, lease ends in M ms)" for a standby's refusals.
std::string LeaderText(store::Store& store) {
  auto lease = store.ReadLeader();
  if (!lease) return "the leader is not known (" + lease.error().message + ")";
  if (!*lease) return "nobody leads yet";
  const store::LeaderLease& l = **lease;
  return "the leader is " + l.holder + " (epoch " + std::to_string(l.epoch) + ", lease ends in " +
         std::to_string(l.expires_ms - l.now_ms) + " ms)";
}

}  // namespace

Result<store::LeaderLease> LeadOrStandBy(store::Store& store, const std::string& holder, const DaemonConfig& config,
                                         const std::shared_ptr<grpc::ServerCredentials>& agent_creds,
                                         const std::shared_ptr<grpc::ServerCredentials>& users_tcp_creds,
                                         bool handle_signals) {
  const auto lease_ms = static_cast<int64_t>(config.store_lease_s * 1000);
  auto lease = store.AcquireLeadership(holder, lease_ms);
  if (lease) return lease;
  if (!config.store_standby || lease.error().message.find("held by") == std::string::npos)
    return Fail(store.path(), "another phalanxd leads this store: " + lease.error().message);
  StandbyGate::Listen listen;
  listen.socket_path = config.socket_path;
  if (!config.users_tcp.listen.empty()) {
    listen.users_tcp_creds = users_tcp_creds;
    listen.users_tcp = config.users_tcp.listen;
  }
  if (!config.agents.listen.empty()) {
    listen.agents = config.agents.listen;
    listen.agents_creds = agent_creds;
  }
  PHX_ASSIGN_OR_RETURN(auto gate, StandbyGate::Start(listen));
  // SIGINT/SIGTERM end the wait (the daemon's own signal handling starts once it leads).
  std::atomic<bool> stop{false};
  boost::asio::io_context sig_io;
  std::optional<boost::asio::signal_set> signals;
  std::thread sig_thread;
  if (handle_signals) {
    signals.emplace(sig_io, SIGINT, SIGTERM);
    signals->async_wait([&stop](const boost::system::error_code& ec, int) {
      if (!ec) stop = true;
    });
    sig_thread = std::thread([&sig_io] { sig_io.run(); });
  }
  auto end_signals = [&] {
    if (!sig_thread.joinable()) return;
    boost::asio::post(sig_io, [&] { signals->cancel(); });
    sig_thread.join();
    signals.reset();
  };
  std::string leader = LeaderText(store);
  gate->SetLeader(leader);
  PHX_LOG(kInfo) << "standby: " << leader << "; refusing calls on " << config.socket_path
                 << (listen.users_tcp.empty() ? "" : ", " + listen.users_tcp)
                 << (listen.agents.empty() ? "" : ", " + listen.agents) << "; trying every "
                 << config.store_lease_renew_s << " s";
  const auto step = std::chrono::milliseconds(static_cast<int64_t>(config.store_lease_renew_s * 1000));
  for (;;) {
    const auto next = std::chrono::steady_clock::now() + step;
    while (!stop && std::chrono::steady_clock::now() < next) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (stop) {
      end_signals();
      gate->Stop();
      return Fail(store.path(), std::string(kStoppedInStandby));
    }
    lease = store.AcquireLeadership(holder, lease_ms);
    if (lease) break;
    if (lease.error().message.find("held by") == std::string::npos) {
      end_signals();
      gate->Stop();
      return Fail(store.path(), "standby: trying to take the lease failed: " + lease.error().message);
    }
    if (std::string now = LeaderText(store); now != leader) gate->SetLeader(leader = now);
  }
  end_signals();
  gate->Stop();  // the leader's listeners bind the same addresses next
  PHX_LOG(kInfo) << "standby: took over the store's leadership (epoch " << lease->epoch << ", " << gate->refused()
                 << " calls refused while standing by); rebuilding from the store";
  return lease;
}

}  // namespace phalanx::service
