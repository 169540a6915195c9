#include "agent/agent.h"

#include <unistd.h>

#include <future>

#include <boost/asio/post.hpp>

#include "agent/proto_convert.h"
#include "util/log.h"

namespace phalanx::agent {

namespace asio = boost::asio;
using std::chrono::milliseconds;

template <typename F>
auto Agent::OnIo(F f) {
  std::packaged_task<decltype(f())()> task(std::move(f));
  auto result = task.get_future();
  asio::post(io_, [&task] { task(); });
  return result.get();
}

template <typename F>
void Agent::Guarded(F f) {
  asio::post(io_, [this, f = std::move(f)] {
    if (supervisor_) f();
  });
}

Result<std::unique_ptr<Agent>> Agent::Create(AgentOptions options) {
  PHX_ASSIGN_OR_RETURN(auto state, PartStateDir::Open(options.state_dir));
  PHX_ASSIGN_OR_RETURN(int lock_fd, state.LockAgent(std::chrono::seconds(5)));
  GpuInventory gpus = DiscoverGpus(options.gpus);
  for (const std::string& note : gpus.notes) Log(LogLevel::kInfo, note);
  Log(LogLevel::kInfo, std::to_string(gpus.gpus.size()) + " GPUs (source " + gpus.source + ")");
  std::unique_ptr<Agent> agent(new Agent(std::move(options), std::move(state), std::move(gpus), lock_fd));
  Agent* a = agent.get();
  // Link callbacks hop onto the io thread; Guarded drops them once Stop has begun there.
  DaemonLink::Callbacks callbacks{
      .hello = [a] { return a->OnIo([a] { return a->Hello(); }); },
      .registered = [a](const v1::RegisterResponse& r) { a->Guarded([a, r] { a->ApplyWelcome(r); }); },
      .connected = [a](uint64_t generation) { a->Guarded([a, generation] { a->OnConnected(generation); }); },
      .command = [a](v1::DaemonCommand c) { a->Guarded([a, c = std::move(c)] { a->OnCommand(c); }); },
      .delivered = [a](uint64_t token) { a->Guarded([a, token] { a->OnDelivered(token); }); },
  };
  PHX_ASSIGN_OR_RETURN(auto link, DaemonLink::Create(agent->options_.link, std::move(callbacks)));
  agent->link_ = std::move(link);
  return agent;
}

Agent::Agent(AgentOptions options, PartStateDir state, GpuInventory gpus, int lock_fd)
    : options_(std::move(options)),
      gpus_(std::move(gpus)),
      lock_fd_(lock_fd),
      work_(io_.get_executor()),
      heartbeat_(options_.heartbeat),
      heartbeat_timer_(io_),
      fence_timer_(io_) {
  Launcher launcher(LauncherOptions{.node = options_.node,
                                    .identity = options_.identity,
                                    .agent_lock = state.AgentLockPath(),
                                    .orphan_grace = options_.orphan_grace,
                                    .orphan_kill_grace = options_.kill_grace});
  PartSupervisor::Callbacks callbacks{
      .on_end =
          [this](const PartEnd& end) {
    v1::AgentReport report;
    *report.mutable_exited() = PartEndToProto(end);
    Report(std::move(report), end.launch_id);
      },
      .on_checkpoint =
          [this](const CheckpointSeen& seen) {
    v1::AgentReport report;
    *report.mutable_checkpoint() = CheckpointToProto(seen);
    Report(std::move(report), 0);
      },
      };
  supervisor_ = std::make_unique<PartSupervisor>(io_, std::move(launcher), std::move(state), options_.supervisor,
                                                 std::move(callbacks));
}

Agent::~Agent() { Stop(); }

void Agent::Start() {
  if (started_) return;
  started_ = true;
  supervisor_->Adopt();  // the io thread does not run yet: this thread is the io thread for now
  RequeuePending();
  ArmHeartbeat();
  io_thread_ = std::thread([this] { io_.run(); });
  link_->Start();
}

void Agent::Stop() {
  if (started_) {
    link_->Stop();  // no more callbacks after this
    OnIo([this] {
      heartbeat_timer_.cancel();
      fence_timer_.cancel();
      supervisor_.reset();
      return 0;
    });
    work_.reset();
    io_.stop();
    io_thread_.join();
    started_ = false;
  }
  if (lock_fd_ >= 0) close(lock_fd_);  // nothing supervises the parts now: a next agent may
  lock_fd_ = -1;                       // take the state dir (their keepers count the orphan grace)
}

std::vector<PartInfo> Agent::Running() {
  if (!started_) return {};
  return OnIo([this] { return supervisor_->Running(); });
}

v1::RegisterRequest Agent::Hello() {
  v1::RegisterRequest hello;
  if (!supervisor_) return hello;  // stopping
  hello.set_node(options_.node);
  for (const GpuDevice& gpu : gpus_.gpus) *hello.add_gpus() = GpuToProto(gpu);
  hello.set_gpu_source(gpus_.source);
  for (const PartInfo& part : supervisor_->Running(/*include_unreported=*/true))
    *hello.add_running() = RunningToProto(part);
  hello.set_version(options_.version);
  hello.set_address(options_.address);
  hello.set_wants_heartbeat_ack(true);
  return hello;
}

void Agent::ApplyWelcome(const v1::RegisterResponse& welcome) {
  daemon_stores_exits_ = welcome.stores_exits();
  const milliseconds fence(std::max<int64_t>(welcome.fence_after_s(), 0) * 1000);
  if (fence != fence_.limit()) {
    Log(LogLevel::kInfo, fence.count() > 0
                             ? "fence: running parts stop after " + std::to_string(welcome.fence_after_s()) +
                                   " s without contact with phalanxd"
                             : "fence: off (the daemon gives none)");
  }
  Contact();  // a registration answered (logs when it ends a fence)
  fence_.SetLimit(fence, std::chrono::steady_clock::now());
  ArmFence();
  // Retry at least four times within the fence: a daemon back in time is reached in time.
  link_->SetRetryCap(fence / 4);
  if (welcome.heartbeat_interval_s() > 0 && milliseconds(welcome.heartbeat_interval_s() * 1000) != heartbeat_) {
    heartbeat_ = milliseconds(welcome.heartbeat_interval_s() * 1000);
    ArmHeartbeat();
  }
  for (uint64_t job : welcome.kill_jobs()) supervisor_->Stop(job, 0, options_.kill_grace, "killed");
}

void Agent::OnConnected(uint64_t generation) {
  last_heard_ = std::chrono::steady_clock::now();
  for (auto& [token, pending] : pending_) {
    if (pending.generation == generation) continue;
    if (uint64_t g = link_->Send(pending.report, token)) pending.generation = g;
  }
  Heartbeat();
}

void Agent::OnCommand(const v1::DaemonCommand& command) {
  Contact();
  switch (command.command_case()) {
    case v1::DaemonCommand::kLaunch: OnLaunch(command.launch()); break;
    case v1::DaemonCommand::kSignal: {
      const v1::SignalCommand& s = command.signal();
      if (auto st = supervisor_->Signal(s.job_id(), s.launch_id(), s.signal(), s.checkpoint()); !st) {
        Log(LogLevel::kWarn, "signal: " + st.error().ToString());
      }
      break;
    }
    case v1::DaemonCommand::kSuspend: {
      const v1::SuspendCommand& s = command.suspend();
      if (auto st = supervisor_->Suspend(s.job_id(), s.launch_id(), s.resume()); !st) {
        Log(LogLevel::kWarn, std::string(s.resume() ? "resume" : "suspend") + ": " + st.error().ToString());
      }
      break;
    }
    case v1::DaemonCommand::kKill: {
      const v1::KillCommand& k = command.kill();
      const size_t n = supervisor_->Stop(k.job_id(), k.launch_id(),
                                         milliseconds(std::max<int64_t>(k.grace_s(), 0) * 1000), "killed");
      Log(n > 0 ? LogLevel::kInfo : LogLevel::kWarn,
          "kill job " + std::to_string(k.job_id()) +
              (k.launch_id() != 0 ? " launch " + std::to_string(k.launch_id()) : "") + " (" + k.reason() +
              "): " + std::to_string(n) + " part(s) here");
      break;
    }
    case v1::DaemonCommand::kWelcome: ApplyWelcome(command.welcome()); break;
    case v1::DaemonCommand::kExitStored: OnExitStored(command.exit_stored()); break;
    case v1::DaemonCommand::kHeartbeatAck: break;  // a contact, nothing more
    case v1::DaemonCommand::COMMAND_NOT_SET: Log(LogLevel::kWarn, "empty command from the daemon"); break;
  }
}

void Agent::OnLaunch(const v1::LaunchCommand& launch) {
  if (supervisor_->Knows(launch.launch_id())) {
    Log(LogLevel::kInfo, "launch " + std::to_string(launch.launch_id()) + " is already known here; ignored");
    return;
  }
  Result<PartInfo> started = [&]() -> Result<PartInfo> {
    PHX_ASSIGN_OR_RETURN(auto spec, LaunchSpecFromProto(launch));
    for (uint32_t index : spec.gpu_indices) {
      bool found = false;
      for (const GpuDevice& gpu : gpus_.gpus) found = found || gpu.index == index;
      if (!found) return Fail("launch.gpu_indices", std::to_string(index) + " is not a GPU of node " + options_.node);
    }
    return supervisor_->Launch(spec, launch.SerializeAsString());  // kept while it waits for GPUs
  }();
  if (started) {
    Heartbeat();
    return;
  }
  Log(LogLevel::kWarn, "job " + std::to_string(launch.job_id()) + " launch " + std::to_string(launch.launch_id()) +
                           " failed: " + started.error().ToString());
  v1::AgentReport report;
  v1::PartExited* exited = report.mutable_exited();
  exited->set_job_id(launch.job_id());
  exited->set_launch_id(launch.launch_id());
  exited->set_exit_code(127);
  exited->set_reason("launch failed: " + started.error().message);
  Report(std::move(report), 0);
}

void Agent::RequeuePending() {
  for (const auto& [id, blob] : supervisor_->PendingLaunches()) {
    v1::LaunchCommand launch;
    if (supervisor_->Knows(id)) {
      supervisor_->DropPending(id);  // it started just before the previous agent stopped
      continue;
    }
    if (!launch.ParseFromString(blob) || launch.launch_id() != id) {
      Log(LogLevel::kWarn, "launch " + std::to_string(id) + ": its saved command does not decode; dropped");
      supervisor_->DropPending(id);
      continue;
    }
    Log(LogLevel::kInfo, "job " + std::to_string(launch.job_id()) + " launch " + std::to_string(id) +
                             " was waiting for its GPUs when the previous agent stopped: queued again");
    OnLaunch(launch);
    if (!supervisor_->Knows(id)) supervisor_->DropPending(id);  // failed (reported)
  }
}

void Agent::Report(v1::AgentReport report, LaunchId forget_when_done) {
  const uint64_t token = next_token_++;
  Pending& p = pending_[token];
  p.report = std::move(report);
  p.forget = forget_when_done;
  p.generation = link_ ? link_->Send(p.report, token) : 0;
}

void Agent::OnDelivered(uint64_t token) {
  auto it = pending_.find(token);
  if (it == pending_.end()) return;
  // Written is not stored: a daemon killed before its commit would never learn this exit.
  if (it->second.report.has_exited() && daemon_stores_exits_) return;  // until ExitStored
  if (it->second.forget != 0) supervisor_->Forget(it->second.forget);
  pending_.erase(it);
}

void Agent::OnExitStored(const v1::ExitStored& stored) {
  const LaunchId launch = stored.launch_id();
  std::erase_if(pending_, [launch](const auto& entry) {
    return entry.second.report.has_exited() && entry.second.report.exited().launch_id() == launch;
  });
  Log(LogLevel::kDebug,
      "job " + std::to_string(stored.job_id()) + " launch " + std::to_string(launch) + ": the daemon stored its exit");
  supervisor_->Forget(launch);  // no-op unless it is an ended part
}

void Agent::Heartbeat() {
  v1::AgentReport report;
  v1::Heartbeat* hb = report.mutable_heartbeat();
  hb->set_time(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  for (const PartInfo& part : supervisor_->Running()) *hb->add_running() = RunningToProto(part);
  link_->Send(std::move(report), 0);
}

void Agent::ArmHeartbeat() {
  heartbeat_timer_.expires_after(heartbeat_);
  heartbeat_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !supervisor_) return;  // cancelled, or completed just before Stop
    const auto silent = std::chrono::steady_clock::now() - last_heard_;
    if (last_heard_.time_since_epoch().count() != 0 && silent > 3 * heartbeat_ + milliseconds(500)) {
      link_->DropStream("no answer to 3 heartbeats (" +
                        std::to_string(std::chrono::duration_cast<milliseconds>(silent).count()) + " ms)");
      last_heard_ = {};  // until the next stream
    }
    Heartbeat();
    ArmHeartbeat();
  });
}

void Agent::Contact() {
  last_heard_ = std::chrono::steady_clock::now();
  if (fence_.fenced()) Log(LogLevel::kInfo, "fence: phalanxd is reachable again");
  fence_.Contact(std::chrono::steady_clock::now());
}

void Agent::ArmFence() {
  fence_timer_.expires_after(fence_.UntilDue(std::chrono::steady_clock::now()));
  fence_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !supervisor_) return;  // re-armed, cancelled, or completed just before Stop
    if (fence_.Due(std::chrono::steady_clock::now())) FenceParts();
    ArmFence();
  });
}

void Agent::FenceParts() {
  fence_.Fence();
  const int64_t seconds = fence_.limit().count() / 1000;
  const std::string reason = "fenced: no contact with phalanxd for " + std::to_string(seconds) + " s";
  size_t n = 0;
  for (const PartInfo& part : supervisor_->Running())
    n += supervisor_->Stop(part.job_id, part.launch_id, options_.kill_grace, reason);
  // Once per cut: Due stays false until the daemon is heard from again.
  Log(LogLevel::kWarn, reason + ": stopping " + std::to_string(n) + " part(s) (SIGTERM, SIGKILL after " +
                           std::to_string(options_.kill_grace.count() / 1000) +
                           " s), so that a job started elsewhere never runs twice");
}

}  // namespace phalanx::agent
