#include "service/launch_book.h"

#include "service/proto_convert.h"
#include "util/log.h"

namespace phalanx::service {

LaunchBook::LaunchBook(std::map<JobId, LaunchInfo> unfinished, store::Store* reader)
    : reader_(reader), unfinished_(std::move(unfinished)) {}

std::string LaunchBook::Encode(const LaunchInfo& info) { return EncodeLaunchInfo(info); }

void LaunchBook::Add(JobId job, LaunchInfo info) { unfinished_[job] = std::move(info); }

const LaunchInfo* LaunchBook::FindUnfinished(JobId job) const {
  auto it = unfinished_.find(job);
  return it == unfinished_.end() ? nullptr : &it->second;
}

const LaunchInfo* LaunchBook::Find(const JobRecord& job) {
  const JobId id = job.spec.id;
  if (auto it = unfinished_.find(id); it != unfinished_.end()) return &it->second;
  if (auto it = final_.find(id); it != final_.end()) return &it->second;
  // A finished job: its launch info, with its outcome, is in the store (read on the io thread's
  // own connection).
  if (reader_ == nullptr || !IsFinal(job.state)) return nullptr;
  auto blob = reader_->LoadLaunchInfo(id);
  if (!blob) {
    PHX_LOG(kWarn) << "reading the launch info of job " << id << ": " << blob.error().ToString();
    return nullptr;
  }
  if (!blob->has_value()) return nullptr;
  auto info = DecodeLaunchInfo(**blob, id);
  if (!info) {
    PHX_LOG(kWarn) << info.error().ToString();
    return nullptr;
  }
  if (final_.size() >= kFinalCache) final_.erase(final_.begin());
  return &final_.emplace(id, std::move(*info)).first->second;
}

int32_t LaunchBook::CheckpointSignal(JobId job) const {
  const LaunchInfo* info = FindUnfinished(job);
  return info != nullptr ? info->spec().checkpoint_signal() : 0;
}

void LaunchBook::SetOutcome(JobId job, int32_t exit_code, const std::string& reason) {
  auto it = unfinished_.find(job);
  if (it == unfinished_.end()) return;
  it->second.set_exit_code(exit_code);
  it->second.set_reason(reason);
}

void LaunchBook::SaveOutcome(store::Batch& b, const std::vector<GpuId>& last_gpus, const JobRecord& job,
                             const Topology& topo) {
  const JobId id = job.spec.id;
  auto it = unfinished_.find(id);
  if (it == unfinished_.end()) return;
  LaunchInfo info = std::move(it->second);
  unfinished_.erase(it);
  SetLastPlacement(job.gpus.empty() ? last_gpus : job.gpus, topo, &info);
  b.SetLaunchInfo(id, EncodeLaunchInfo(info));
  if (final_.size() >= kFinalCache && !final_.contains(id)) final_.erase(final_.begin());
  final_[id] = std::move(info);
}

}  // namespace phalanx::service
