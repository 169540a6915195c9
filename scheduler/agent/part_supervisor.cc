#include "agent/part_supervisor.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <boost/asio/posix/stream_descriptor.hpp>

#include "agent/checkpoint_file.h"
#include "agent/proc_util.h"
#include "util/log.h"

namespace phalanx::agent {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct PartSupervisor::Part {
  explicit Part(asio::io_context& io) : walltime(io), kill(io) {}
  PartRecord rec;
  uint64_t seq = 0;                  // arrival order (0: adopted)
  bool waiting = false;              // queued behind an earlier part holding one of its GPUs
  std::unique_ptr<LaunchSpec> spec;  // while waiting
  bool own_child = false;            // the keeper is our child: reap it
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

bool ShareGpu(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  for (uint32_t g : a) {
    if (std::find(b.begin(), b.end(), g) != b.end()) return true;
  }
  return false;
}

std::string GpuList(const std::vector<uint32_t>& gpus) {
  std::string out;
  for (uint32_t g : gpus) out += (out.empty() ? "" : ",") + std::to_string(g);
  return out;
}

}  // namespace

template <typename F>
auto PartSupervisor::Guard(const std::shared_ptr<Part>& part, F f) {
  return [alive = std::weak_ptr<int>(alive_), weak = std::weak_ptr<Part>(part),
          f = std::move(f)](const boost::system::error_code& ec) {
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
  StartWaiting();
}

Result<PartInfo> PartSupervisor::Launch(const LaunchSpec& spec, std::string_view pending_blob) {
  if (parts_.count(spec.launch_id) > 0)
    return Fail("launch", "launch id " + std::to_string(spec.launch_id) + " is already known here");
  auto part = std::make_shared<Part>(io_);
  part->seq = next_seq_++;
  part->rec.job_id = spec.job_id;
  part->rec.launch_id = spec.launch_id;
  part->rec.gpus = spec.gpu_indices;
  if (const auto blockers = Blockers(*part); !blockers.empty()) {
    part->waiting = true;
    part->spec = std::make_unique<LaunchSpec>(spec);
    if (!pending_blob.empty()) {
      if (auto s = state_.SavePending(spec.launch_id, pending_blob); !s) {
        Log(LogLevel::kWarn, "cannot record waiting " + Describe(part->rec) +
                                 " (an agent restart before it starts loses it): " + s.error().ToString());
      }
    }
    std::string holders;
    for (const auto& b : blockers) {
      holders += (holders.empty() ? "" : ", ") + Describe(b->rec) + (b->waiting ? " (waiting)" : "") +
                 (!b->waiting && b->rec.stop_reason.empty() ? " (not being stopped)" : "");
    }
    Log(LogLevel::kInfo,
        Describe(part->rec) + " waits for GPU(s) " + GpuList(spec.gpu_indices) + ", held by " + holders);
    parts_[spec.launch_id] = part;
    return PartInfo{spec.job_id, spec.launch_id, 0};
  }
  if (!pending_blob.empty()) state_.RemovePending(spec.launch_id);  // queued again after a restart
  PHX_RETURN_IF_ERROR(Start(*part, spec));
  parts_[spec.launch_id] = part;
  Watch(part);
  ArmWalltime(part);
  return PartInfo{part->rec.job_id, part->rec.launch_id, part->rec.pid};
}

Status PartSupervisor::Start(Part& part, const LaunchSpec& spec) {
  PHX_ASSIGN_OR_RETURN(auto launched, launcher_.Launch(spec, state_.FilesFor(spec.launch_id)));
  part.own_child = true;
  PartRecord& r = part.rec;
  r.pid = launched.pid;
  r.pid_start = launched.pid_start;
  r.keeper_pid = launched.keeper_pid;
  r.keeper_start = launched.keeper_start;
  r.boot_id = BootId();
  r.start_time_ms = launched.start_time_ms;
  r.walltime_ms = spec.walltime.count();
  r.checkpoint_signal = spec.checkpoint_signal;
  r.uid = launched.uid;
  r.checkpoint_file = launched.checkpoint_file;
  // The launcher made the file empty; a job that reported within its first moments has already
  // written it, and that write must still be seen as a report: only the empty file is "seen".
  if (auto probe = ProbeCheckpointFile(r.checkpoint_file, r.uid); probe && probe->content.empty())
    r.checkpoint_seen = probe->signature;
  Save(part);
  Log(LogLevel::kInfo, "started " + Describe(r) + ": pid " + std::to_string(r.pid) +
                           (r.gpus.empty() ? "" : ", GPU(s) " + GpuList(r.gpus)));
  return {};
}

std::vector<std::shared_ptr<PartSupervisor::Part>> PartSupervisor::Blockers(const Part& part) const {
  std::vector<std::shared_ptr<Part>> out;
  for (const auto& [id, other] : parts_) {
    if (other.get() == &part || other->ended) continue;
    if (other->waiting && other->seq >= part.seq) continue;  // queued after it
    if (ShareGpu(other->rec.gpus, part.rec.gpus)) out.push_back(other);
  }
  return out;
}

void PartSupervisor::StartWaiting() {
  std::vector<std::shared_ptr<Part>> waiting;
  for (const auto& [id, part] : parts_) {
    if (part->waiting && !part->ended) waiting.push_back(part);
  }
  std::sort(waiting.begin(), waiting.end(), [](const auto& a, const auto& b) { return a->seq < b->seq; });
  for (const auto& part : waiting) {
    if (!part->waiting || part->ended || !Blockers(*part).empty()) continue;
    part->waiting = false;
    const std::unique_ptr<LaunchSpec> spec = std::move(part->spec);
    const LaunchId launch = part->rec.launch_id;
    Log(LogLevel::kInfo, Describe(part->rec) + ": its GPUs are free now");
    if (auto s = Start(*part, *spec); !s) {
      state_.RemovePending(launch);
      Log(LogLevel::kWarn, Describe(part->rec) + " failed: " + s.error().ToString());
      Finish(part, PartEnd{part->rec.job_id, launch, 127, 0, "launch failed: " + s.error().message});
      continue;
    }
    state_.RemovePending(launch);
    Watch(part);
    ArmWalltime(part);
  }
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
  if (part->rec.walltime_ms <= 0 || part->rec.suspended_at_ms != 0) return;  // suspended: no clock
  const int64_t left = part->rec.start_time_ms + part->rec.walltime_ms - NowMs();
  part->walltime.expires_after(milliseconds(std::max<int64_t>(left, 0)));
  part->walltime.async_wait(Guard(part, [this](const std::shared_ptr<Part>& p) {
    Log(LogLevel::kInfo, Describe(p->rec) + " reached its walltime");
    StopPart(p, options_.walltime_grace, "walltime");
  }));
}

Status PartSupervisor::Signal(JobId job, LaunchId launch, int sig, bool checkpoint) {
  // Without a launch id, a part being stopped gets the signal only when every part of the job
  // here is being stopped: otherwise it is an earlier launch, and the signal is for the newer.
  bool current = false;
  bool waiting = false;
  for (const auto& [id, part] : parts_) {
    if (part->ended || part->rec.job_id != job || (launch != 0 && id != launch)) continue;
    current = current || part->rec.stop_reason.empty();
    waiting = waiting || part->waiting;
  }
  size_t hit = 0;
  for (auto& [id, part] : parts_) {
    if (part->ended || part->waiting || part->rec.job_id != job) continue;
    if (launch != 0 ? id != launch : current && !part->rec.stop_reason.empty()) continue;
    int s = sig;
    if (s == 0 && checkpoint) s = part->rec.checkpoint_signal > 0 ? part->rec.checkpoint_signal : SIGUSR1;
    if (s <= 0) return Fail("job " + std::to_string(job), "no signal given");
    if (auto st = SignalGroup(part->rec.pid, s); !st) return st;
    Log(LogLevel::kInfo, "sent " + SignalName(s) + " to " + Describe(part->rec));
    ++hit;
  }
  if (hit == 0) {
    const std::string what = "job " + std::to_string(job) + (launch != 0 ? " launch " + std::to_string(launch) : "");
    if (waiting) return Fail(what, "its part here has not started yet (it waits for its GPUs)");
    return Fail(what, "no running part on this node");
  }
  return {};
}

Status PartSupervisor::Suspend(JobId job, LaunchId launch, bool resume) {
  size_t hit = 0;
  for (auto& [id, part] : parts_) {
    if (part->ended || part->waiting || part->rec.job_id != job || (launch != 0 && id != launch)) continue;
    if (!part->rec.stop_reason.empty()) continue;  // being stopped: it must run to see the SIGTERM
    PartRecord& r = part->rec;
    if (auto st = SignalGroup(r.pid, resume ? SIGCONT : SIGSTOP); !st) return st;
    ++hit;
    if (resume && r.suspended_at_ms != 0) {
      if (r.walltime_ms > 0) r.walltime_ms += std::max<int64_t>(0, NowMs() - r.suspended_at_ms);
      r.suspended_at_ms = 0;
      Save(*part);
      ArmWalltime(part);
    } else if (!resume && r.suspended_at_ms == 0) {
      r.suspended_at_ms = NowMs();
      part->walltime.cancel();
      Save(*part);
    }
    Log(LogLevel::kInfo, std::string(resume ? "resumed " : "suspended ") + Describe(r));
  }
  if (hit == 0)
    return Fail("job " + std::to_string(job) + (launch != 0 ? " launch " + std::to_string(launch) : ""),
                "no running part on this node");
  return {};
}

size_t PartSupervisor::Stop(JobId job, LaunchId launch, milliseconds grace, const std::string& reason) {
  size_t n = 0;
  std::vector<std::shared_ptr<Part>> dropped;
  for (auto& [id, part] : parts_) {
    if (part->ended || part->rec.job_id != job || (launch != 0 && id != launch)) continue;
    ++n;
    if (part->waiting) {
      dropped.push_back(part);
    } else {
      StopPart(part, grace, reason);
    }
  }
  for (const auto& part : dropped) {
    part->waiting = false;
    part->spec.reset();
    state_.RemovePending(part->rec.launch_id);
    Log(LogLevel::kInfo, "dropping " + Describe(part->rec) + " (" + reason + ") before it started");
    Finish(part, PartEnd{part->rec.job_id, part->rec.launch_id, -1, 0, reason});
  }
  if (!dropped.empty()) StartWaiting();  // what waited behind a dropped part
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
  PartEnd end{r.job_id, r.launch_id, 0, 0, r.stop_reason.empty() ? "exited" : r.stop_reason};
  int64_t orphan_grace_ms = -1;
  if (auto status = state_.ReadExitStatus(r.launch_id, &orphan_grace_ms); status && *status >= 0) {
    if (WIFSIGNALED(*status)) {
      end.exit_code = -1;
      end.term_signal = WTERMSIG(*status);
    } else {
      end.exit_code = WEXITSTATUS(*status);
    }
    if (orphan_grace_ms >= 0) {
      end.reason = "agent gone: its keeper stopped it after " + std::to_string(orphan_grace_ms / 1000) +
                   (orphan_grace_ms % 1000 != 0 ? "." + std::to_string(orphan_grace_ms % 1000 / 100) : "") +
                   " s without an agent";
    }
  } else {
    end.exit_code = -1;
    end.reason = "lost: its keeper process ended without recording an exit status";
    if (r.boot_id == BootId() && r.pid_start != 0 && ProcStartTicks(r.pid) == r.pid_start) {
      (void)SignalGroup(r.pid, SIGKILL);  // the job outlived its keeper: end it
    }
  }
  Finish(part, end);
  StartWaiting();  // parts that waited for its GPUs
}

void PartSupervisor::Finish(const std::shared_ptr<Part>& part, const PartEnd& end) {
  part->ended = true;
  part->walltime.cancel();
  part->kill.cancel();
  part->pidfd.reset();
  Log(LogLevel::kInfo, Describe(part->rec) + " ended: " + end.reason + ", exit code " + std::to_string(end.exit_code) +
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
    if (part->ended || part->waiting) continue;
    ProbeCheckpoint(*part);
    if (part->pidfd) continue;
    const char state = ProcState(part->rec.keeper_pid);
    if (state == 0 || state == 'Z' || ProcStartTicks(part->rec.keeper_pid) != part->rec.keeper_start)
      exited.push_back(part);
  }
  for (auto& part : exited) OnKeeperExit(part);
  tick_->expires_after(options_.poll_interval);
  tick_->async_wait([this, alive = std::weak_ptr<int>(alive_)](const boost::system::error_code& ec) {
    if (!ec && !alive.expired()) Tick();
  });
}

std::vector<PartInfo> PartSupervisor::Running(bool include_unreported) const {
  std::vector<PartInfo> out;
  for (const auto& [id, part] : parts_) {
    if (!part->ended || include_unreported)
      out.push_back(PartInfo{part->rec.job_id, part->rec.launch_id, part->waiting ? 0 : part->rec.pid,
                             part->rec.suspended_at_ms != 0});
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
    Log(LogLevel::kError, "cannot record " + Describe(part.rec) +
                              " (it will not be re-adopted after a restart): " + s.error().ToString());
  }
}

}  // namespace phalanx::agent
