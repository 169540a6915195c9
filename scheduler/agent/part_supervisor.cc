#include "agent/part_supervisor.h"

#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>

#include <boost/asio/posix/stream_descriptor.hpp>

#include "agent/checkpoint_file.h"
#include "agent/log.h"
#include "agent/proc_util.h"

namespace phalanx::agent {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct PartSupervisor::Part {
  explicit Part(asio::io_context& io) : walltime(io), kill(io) {}
  PartRecord rec;
  bool own_child = false;  // the keeper is our child: reap it
  bool ended = false;
  std::unique_ptr<asio::posix::stream_descriptor> pidfd;  // null: poll in Tick
  asio::steady_timer walltime;
  asio::steady_timer kill;
  bool kill_armed = false;
  Clock::time_point kill_at;
};

namespace {

int64_t NowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string Describe(const PartRecord& r) {
  return "job " + std::to_string(r.job_id) + " launch " + std::to_string(r.launch_id);
}

}  // namespace

template <typename F>
auto PartSupervisor::Guard(const std::shared_ptr<Part>& part, F f) {
  return [alive = std::weak_ptr<int>(alive_), weak = std::weak_ptr<Part>(part), f = std::move(f)](
             const boost::system::error_code& ec) {
    if (ec == asio::error::operation_aborted || alive.expired()) return;
    if (auto p = weak.lock(); p && !p->ended) f(p);
  };
}

PartSupervisor::PartSupervisor(asio::io_context& io, Launcher launcher, PartStateDir state, SupervisorOptions options,
                               Callbacks callbacks)
    : io_(io),
      launcher_(std::move(launcher)),
      state_(std::move(state)),
      options_(options),
      callbacks_(std::move(callbacks)),
      tick_(std::make_unique<asio::steady_timer>(io)) {
  Tick();
}

PartSupervisor::~PartSupervisor() = default;

void PartSupervisor::Adopt() {
  std::vector<Error> errors;
  std::vector<PartRecord> records = state_.LoadAll(&errors);
  for (const Error& e : errors) Log(LogLevel::kWarn, "ignoring part record: " + e.ToString());
  const std::string boot = BootId();
  for (PartRecord& rec : records) {
    if (parts_.count(rec.launch_id) > 0) continue;
    auto part = std::make_shared<Part>(io_);
    part->rec = std::move(rec);
    parts_[part->rec.launch_id] = part;
    const PartRecord& r = part->rec;
    const bool same_keeper = r.boot_id == boot && r.keeper_start != 0 && ProcStartTicks(r.keeper_pid) == r.keeper_start;
    if (state_.ReadExitStatus(r.launch_id) || !same_keeper) {
      Log(LogLevel::kInfo, "job " + std::to_string(r.job_id) + " launch " + std::to_string(r.launch_id) +
                               " ended while no agent watched it");
      OnKeeperExit(part);
      continue;
    }
    Log(LogLevel::kInfo, "re-adopted job " + std::to_string(r.job_id) + " launch " + std::to_string(r.launch_id) +
                             ": pid " + std::to_string(r.pid));
    Watch(part);
    ArmWalltime(part);
    if (!r.stop_reason.empty()) StopPart(part, options_.walltime_grace, r.stop_reason);  // finish what was begun
  }
}

Result<PartInfo> PartSupervisor::Launch(const LaunchSpec& spec) {
  if (parts_.count(spec.launch_id) > 0) return Fail("launch", "launch id " + std::to_string(spec.launch_id) + " is already known here");
  auto launched = launcher_.Launch(spec, state_.FilesFor(spec.launch_id));
  if (!launched) return std::unexpected(launched.error());
  auto part = std::make_shared<Part>(io_);
  part->own_child = true;
  PartRecord& r = part->rec;
  r.job_id = spec.job_id;
  r.launch_id = spec.launch_id;
  r.pid = launched->pid;
  r.pid_start = launched->pid_start;
  r.keeper_pid = launched->keeper_pid;
  r.keeper_start = launched->keeper_start;
  r.boot_id = BootId();
  r.start_time_ms = launched->start_time_ms;
  r.walltime_ms = spec.walltime.count();
  r.checkpoint_signal = spec.checkpoint_signal;
  r.uid = launched->uid;
  r.checkpoint_file = launched->checkpoint_file;
  if (auto probe = ProbeCheckpointFile(r.checkpoint_file, r.uid)) r.checkpoint_seen = probe->signature;
  Save(*part);
  parts_[spec.launch_id] = part;
  Log(LogLevel::kInfo, "started " + Describe(r) + ": pid " + std::to_string(r.pid));
  Watch(part);
  ArmWalltime(part);
  return PartInfo{r.job_id, r.launch_id, r.pid};
}

void PartSupervisor::Watch(const std::shared_ptr<Part>& part) {
  const int fd = OpenPidfd(part->rec.keeper_pid);
  if (fd < 0) {
    Log(LogLevel::kDebug, "pidfd_open: " + std::string(std::strerror(errno)) + "; polling " + Describe(part->rec));
    return;  // Tick polls it
  }
  part->pidfd = std::make_unique<asio::posix::stream_descriptor>(io_, fd);
  part->pidfd->async_wait(asio::posix::stream_descriptor::wait_read,
                          Guard(part, [this](const std::shared_ptr<Part>& p) { OnKeeperExit(p); }));
}

void PartSupervisor::ArmWalltime(const std::shared_ptr<Part>& part) {
  if (part->rec.walltime_ms <= 0) return;
  const int64_t left = part->rec.start_time_ms + part->rec.walltime_ms - NowMs();
  part->walltime.expires_after(milliseconds(std::max<int64_t>(left, 0)));
  part->walltime.async_wait(Guard(part, [this](const std::shared_ptr<Part>& p) {
    Log(LogLevel::kInfo, Describe(p->rec) + " reached its walltime");
    StopPart(p, options_.walltime_grace, "walltime");
  }));
}

Status PartSupervisor::Signal(JobId job, int sig, bool checkpoint) {
  size_t hit = 0;
  for (auto& [id, part] : parts_) {
    if (part->ended || part->rec.job_id != job) continue;
    int s = sig;
    if (s == 0 && checkpoint) s = part->rec.checkpoint_signal > 0 ? part->rec.checkpoint_signal : SIGUSR1;
    if (s <= 0) return Fail("job " + std::to_string(job), "no signal given");
    if (auto st = SignalGroup(part->rec.pid, s); !st) return st;
    Log(LogLevel::kInfo, "sent " + SignalName(s) + " to " + Describe(part->rec));
    ++hit;
  }
  if (hit == 0) return Fail("job " + std::to_string(job), "no running part on this node");
  return {};
}

size_t PartSupervisor::Stop(JobId job, milliseconds grace, const std::string& reason) {
  size_t n = 0;
  for (auto& [id, part] : parts_) {
    if (!part->ended && part->rec.job_id == job) StopPart(part, grace, reason), ++n;
  }
  return n;
}

void PartSupervisor::StopPart(const std::shared_ptr<Part>& part, milliseconds grace, const std::string& reason) {
  if (part->rec.stop_reason.empty()) {
    part->rec.stop_reason = reason;
    Save(*part);
    Log(LogLevel::kInfo, "stopping " + Describe(part->rec) + " (" + reason + ")");
  }
  const Clock::time_point kill_at = Clock::now() + grace;
  if (grace.count() <= 0) {
    (void)SignalGroup(part->rec.pid, SIGKILL);
    return;
  }
  if (part->kill_armed && part->kill_at <= kill_at) return;
  (void)SignalGroup(part->rec.pid, SIGTERM);
  (void)SignalGroup(part->rec.pid, SIGCONT);  // a stopped job must run to see the SIGTERM
  part->kill_armed = true;
  part->kill_at = kill_at;
  part->kill.expires_at(kill_at);
  part->kill.async_wait(Guard(part, [](const std::shared_ptr<Part>& p) { (void)SignalGroup(p->rec.pid, SIGKILL); }));
}

void PartSupervisor::OnKeeperExit(const std::shared_ptr<Part>& part) {
  PartRecord& r = part->rec;
  if (part->own_child) waitpid(r.keeper_pid, nullptr, WNOHANG);
  ProbeCheckpoint(*part);  // a checkpoint written just before the end is reported first
  part->ended = true;
  part->walltime.cancel();
  part->kill.cancel();
  part->pidfd.reset();
  PartEnd end{r.job_id, r.launch_id, 0, 0, r.stop_reason.empty() ? "exited" : r.stop_reason};
  if (auto status = state_.ReadExitStatus(r.launch_id); status && *status >= 0) {
    if (WIFSIGNALED(*status)) {
      end.exit_code = -1;
      end.term_signal = WTERMSIG(*status);
    } else {
      end.exit_code = WEXITSTATUS(*status);
    }
  } else {
    end.exit_code = -1;
    end.reason = "lost: its keeper process ended without recording an exit status";
    if (r.boot_id == BootId() && r.pid_start != 0 && ProcStartTicks(r.pid) == r.pid_start) {
      (void)SignalGroup(r.pid, SIGKILL);  // the job outlived its keeper: end it
    }
  }
  Log(LogLevel::kInfo, Describe(r) + " ended: " + end.reason + ", exit code " + std::to_string(end.exit_code) +
                           (end.term_signal != 0 ? ", " + SignalName(end.term_signal) : ""));
  if (callbacks_.on_end) callbacks_.on_end(end);
}

void PartSupervisor::ProbeCheckpoint(Part& part) {
  auto probe = ProbeCheckpointFile(part.rec.checkpoint_file, part.rec.uid);
  if (!probe || probe->signature == part.rec.checkpoint_seen) return;
  part.rec.checkpoint_seen = probe->signature;
  Save(part);
  CheckpointSeen seen{part.rec.job_id, part.rec.launch_id, 0, ""};
  if (auto mark = ParseCheckpointContent(probe->content)) {
    seen.epoch = mark->epoch;
    seen.path = mark->path;
  } else {
    Log(LogLevel::kWarn, Describe(part.rec) + ": " + mark.error().ToString() + "; reporting the next epoch");
  }
  Log(LogLevel::kInfo, Describe(part.rec) + " reports checkpoint epoch " + std::to_string(seen.epoch));
  if (callbacks_.on_checkpoint) callbacks_.on_checkpoint(seen);
}

void PartSupervisor::Tick() {
  std::vector<std::shared_ptr<Part>> exited;
  for (auto& [id, part] : parts_) {
    if (part->ended) continue;
    ProbeCheckpoint(*part);
    if (part->pidfd) continue;
    const char state = ProcState(part->rec.keeper_pid);
    if (state == 0 || state == 'Z' || ProcStartTicks(part->rec.keeper_pid) != part->rec.keeper_start) exited.push_back(part);
  }
  for (auto& part : exited) OnKeeperExit(part);
  tick_->expires_after(options_.poll_interval);
  tick_->async_wait([this, alive = std::weak_ptr<int>(alive_)](const boost::system::error_code& ec) {
    if (!ec && !alive.expired()) Tick();
  });
}

std::vector<PartInfo> PartSupervisor::Running() const {
  std::vector<PartInfo> out;
  for (const auto& [id, part] : parts_) {
    if (!part->ended) out.push_back(PartInfo{part->rec.job_id, part->rec.launch_id, part->rec.pid});
  }
  return out;
}

void PartSupervisor::Forget(LaunchId launch) {
  auto it = parts_.find(launch);
  if (it == parts_.end() || !it->second->ended) return;
  if (auto s = state_.Remove(launch); !s) Log(LogLevel::kWarn, s.error().ToString());
  parts_.erase(it);
}

void PartSupervisor::Save(const Part& part) {
  if (auto s = state_.Save(part.rec); !s) {
    Log(LogLevel::kError, "cannot record " + Describe(part.rec) + " (it will not be re-adopted after a restart): " +
                              s.error().ToString());
  }
}

}  // namespace phalanx::agent
