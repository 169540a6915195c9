// Topology: structure queries and the live state (owners, node states, per-domain counters).
// The tree is built from a TopologySpec in topology_builder.cc.
#include "core/topology/topology.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <span>
#include <sstream>
#include <string>

#include "core/common/gpu_words.h"
#include "core/common/hash.h"

namespace phalanx {

std::string_view NodeStateName(NodeState state) {
  switch (state) {
    case NodeState::kUp: return "up";
    case NodeState::kDrain: return "drain";
    case NodeState::kDown: return "down";
  }
  return "up";
}

DomainId Topology::ancestor_at_depth(DomainId d, uint32_t depth) const {
  while (domains_[d.value].depth > depth) d = domains_[d.value].parent;
  return d;
}

DomainId Topology::lowest_common_ancestor(DomainId a, DomainId b) const {
  const uint32_t depth = std::min(domains_[a.value].depth, domains_[b.value].depth);
  a = ancestor_at_depth(a, depth);
  b = ancestor_at_depth(b, depth);
  while (a != b) {
    a = domains_[a.value].parent;
    b = domains_[b.value].parent;
  }
  return a;
}

GpuId Topology::node_gpu(NodeId n, uint32_t local) const {
  const Domain& d = domains_[node_domain_[n.value].value];
  for (uint32_t g = d.first_gpu; g < d.first_gpu + d.gpu_count; ++g) {
    if (gpu_local_[g] == local) return GpuId(g);
  }
  return GpuId();
}

DomainId Topology::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? DomainId() : it->second;
}

NodeId Topology::find_node(std::string_view name) const {
  const DomainId d = find(name);
  if (!d.valid() || domains_[d.value].level != Level::kNode) return NodeId();
  return NodeId(domains_[d.value].first_node);
}

int Topology::count_at_level(Level level) const {
  return static_cast<int>(
      std::count_if(domains_.begin(), domains_.end(), [&](const Domain& d) { return d.level == level; }));
}

void Topology::ChangeNodeFree(NodeId n, uint32_t before, uint32_t after, uint32_t total) {
  for (DomainId a = node_domain_[n.value]; a.valid(); a = domains_[a.value].parent) {
    hist_[a.value * hist_stride_ + before]--;
    hist_[a.value * hist_stride_ + after]++;
    if (before == total) free_nodes_[a.value]--;
    if (after == total) free_nodes_[a.value]++;
  }
}

void Topology::StartPrints() const {
  // Zobrist keys (topology.h), fixed so that runs are reproducible: one pair per GPU (free) and
  // per domain (its crossing load, mixed with the load's value).
  keys_.resize(2 * (gpu_count() + domains_.size()));
  for (size_t i = 0; i < keys_.size(); ++i) keys_[i] = SplitMix64(i ^ 0x5a17a11a5a17a11aULL);
  print_ = PrintsFromScratch();
  load_keys_.resize(2 * domains_.size());
  for (uint32_t i = 0; i < domains_.size(); ++i) {
    load_keys_[2 * i] = LoadKey(i, 0);
    load_keys_[2 * i + 1] = LoadKey(i, 1);
  }
}

std::vector<uint64_t> Topology::PrintsFromScratch() const {
  std::vector<uint64_t> out(2 * domains_.size(), 0);
  auto add = [&](DomainId d, uint64_t a, uint64_t b) {
    for (; d.valid(); d = domains_[d.value].parent) {
      out[2 * d.value] ^= a;
      out[2 * d.value + 1] ^= b;
    }
  };
  for (uint32_t g = 0; g < gpu_count(); ++g) {
    if (is_free(GpuId(g))) add(node_domain_[gpu_node_[g].value], keys_[2 * g], keys_[2 * g + 1]);
  }
  for (uint32_t i = 0; i < domains_.size(); ++i) add(AtNodeOrAbove(DomainId(i)), LoadKey(i, 0), LoadKey(i, 1));
  return out;
}

DomainId Topology::AtNodeOrAbove(DomainId d) const {
  while (domains_[d.value].level < Level::kNode) d = domains_[d.value].parent;
  return d;
}

uint64_t Topology::LoadKey(uint32_t domain, int half) const {
  return LoadKeyOf(domain, half, load_mbs_[domain], load_jobs_[domain]);
}

uint64_t Topology::LoadKeyOf(uint32_t domain, int half, int64_t mbs, uint32_t jobs) const {
  if (jobs == 0 && mbs == 0) return 0;  // no load: no part in the fingerprint
  return SplitMix64(keys_[2 * (gpu_count() + domain) + static_cast<size_t>(half)] + (uint64_t{jobs} << 40) +
                    static_cast<uint64_t>(mbs));
}

void Topology::ChangeLoad(DomainId d, int64_t mbs, int jobs) {
  load_mbs_[d.value] += mbs;
  load_jobs_[d.value] = static_cast<uint32_t>(static_cast<int64_t>(load_jobs_[d.value]) + jobs);
  if (print_.empty()) return;
  // The load's keys before the change are kept (load_keys_): only the new ones are computed.
  uint64_t& key_a = load_keys_[2 * d.value];
  uint64_t& key_b = load_keys_[2 * d.value + 1];
  uint64_t a = key_a, b = key_b;
  key_a = LoadKey(d.value, 0);
  key_b = LoadKey(d.value, 1);
  a ^= key_a;
  b ^= key_b;
  for (d = AtNodeOrAbove(d); d.valid(); d = domains_[d.value].parent) {
    print_[2 * d.value] ^= a;
    print_[2 * d.value + 1] ^= b;
  }
}

void Topology::ChangeGpus(std::span<const GpuId> gpus, bool becomes_free) {
  // One node at a time: the GPUs of a node come in a run (allocations are sorted, and GPU ids
  // follow the tree), so the node and the domains above it change once per run, not per GPU.
  // The counters end as they would one GPU at a time.
  uint64_t* const print = print_.empty() ? nullptr : print_.data();
  for (size_t i = 0; i < gpus.size();) {
    const NodeId n = gpu_node_[gpus[i].value];
    size_t j = i;
    while (j < gpus.size() && gpu_node_[gpus[j].value] == n) ++j;
    if (node_state_[n.value] == NodeState::kUp) {
      const DomainId node = node_domain_[n.value];
      const auto k = static_cast<uint32_t>(j - i);
      uint64_t ka = 0, kb = 0;          // the run's fingerprint keys, for the node and above
      for (size_t x = i; x < j; ++x) {  // the GPU's own domain and any group below the node
        const uint32_t g = gpus[x].value;
        if (print) {
          ka ^= keys_[2 * g];
          kb ^= keys_[2 * g + 1];
        }
        for (DomainId a = gpu_domain_[g]; a != node; a = domains_[a.value].parent) {
          free_[a.value] = becomes_free ? free_[a.value] + 1 : free_[a.value] - 1;
        }
      }
      const uint32_t before = node_free(n);
      for (DomainId a = node; a.valid(); a = domains_[a.value].parent) {
        free_[a.value] = becomes_free ? free_[a.value] + k : free_[a.value] - k;
        if (print) {
          print[2 * a.value] ^= ka;
          print[2 * a.value + 1] ^= kb;
        }
      }
      ChangeNodeFree(n, before, becomes_free ? before + k : before - k, node_gpu_count(n));
    }
    i = j;
  }
}

Topology::RingLoad Topology::job_ring(JobId job) const {
  auto it = jobs_.find(job);
  if (it == jobs_.end() || it->second.suspended) return {};
  return {it->second.crossed, it->second.ring_mbs};
}

std::span<const GpuId> Topology::job_gpus(JobId job) const {
  auto it = jobs_.find(job);
  if (it == jobs_.end() || it->second.suspended) return {};
  return it->second.gpus;
}

void Topology::Charge(const JobAlloc& alloc, int sign) {
  for (DomainId d : alloc.crossed) ChangeLoad(d, sign * alloc.ring_mbs, sign);
}

Status Topology::Hold(std::span<const GpuId> gpus) {
  for (GpuId g : gpus) {
    if (g.value >= gpu_count() || !is_free(g)) return Fail("hold", "GPU " + std::to_string(g.value) + " is not free");
  }
  for (GpuId g : gpus) owner_[g.value] = kHeld;
  ChangeGpus(gpus, false);
  held_gpus_ += gpus.size();
  return {};
}

Status Topology::Unhold(std::span<const GpuId> gpus) {
  for (GpuId g : gpus) {
    if (g.value >= gpu_count() || owner_[g.value] != kHeld)
      return Fail("unhold", "GPU " + std::to_string(g.value) + " is not held");
  }
  for (GpuId g : gpus) owner_[g.value] = kNoJob;
  ChangeGpus(gpus, true);
  held_gpus_ -= gpus.size();
  return {};
}

Status Topology::Suspend(JobId job) {
  if (!SuspendJob(job)) return Fail("job " + std::to_string(job), "holds no GPUs to suspend");
  return {};
}

std::optional<Topology::Suspended> Topology::SuspendJob(JobId job) {
  auto it = jobs_.find(job);
  if (it == jobs_.end() || it->second.suspended) return std::nullopt;
  for (GpuId g : it->second.gpus) owner_[g.value] = kNoJob;
  ChangeGpus(it->second.gpus, true);
  Charge(it->second, -1);
  it->second.suspended = true;
  ++suspended_jobs_;
  return Suspended(job, &it->second);
}

void Topology::StartBulk() {
  if (!bulk_bits_.empty()) return;
  bulk_bits_.assign((gpu_count() + 63) / 64, 0);
  bulk_held_bits_.assign(bulk_bits_.size(), 0);
}

void Topology::MarkBulkWord(std::vector<uint64_t>& bits, uint32_t w, uint64_t m) {
  if ((bulk_bits_[w] | bulk_held_bits_[w]) == 0) bulk_words_.push_back(w);
  bits[w] |= m;
}

void Topology::AddToBulk(const JobAlloc& alloc, int sign) {
  // A job's GPUs come in order: one mark per word they fall in.
  ByWord(alloc.gpus, [this](uint32_t w, uint64_t m) { MarkBulkWord(bulk_bits_, w, m); });
  if (alloc.crossed.empty()) return;
  if (bulk_jobs_.empty()) {
    bulk_mbs_.assign(domains_.size(), 0);
    bulk_jobs_.assign(domains_.size(), 0);
  }
  for (DomainId d : alloc.crossed) {
    // Every job of one call changes by the same sign, so a listed domain's count is never 0.
    if (bulk_jobs_[d.value] == 0) bulk_domains_.push_back(d.value);
    bulk_mbs_[d.value] += sign * alloc.ring_mbs;
    bulk_jobs_[d.value] += sign;
  }
}

void Topology::AddHeldToBulk(GpuId g) { MarkBulkWord(bulk_held_bits_, g.value >> 6, uint64_t{1} << (g.value & 63)); }

void Topology::ApplyBulk(bool jobs_free) {
  std::sort(bulk_words_.begin(), bulk_words_.end());
  bulk_gpus_.clear();  // become free
  bulk_busy_.clear();
  for (uint32_t w : bulk_words_) {
    const uint64_t jobs = bulk_bits_[w] & ~bulk_held_bits_[w], held = bulk_held_bits_[w] & ~bulk_bits_[w];
    for (uint64_t b = jobs_free ? jobs : held; b != 0; b &= b - 1) {
      bulk_gpus_.push_back(GpuId(w * 64 + static_cast<uint32_t>(std::countr_zero(b))));
    }
    for (uint64_t b = jobs_free ? held : jobs; b != 0; b &= b - 1) {
      bulk_busy_.push_back(GpuId(w * 64 + static_cast<uint32_t>(std::countr_zero(b))));
    }
    bulk_bits_[w] = 0;
    bulk_held_bits_[w] = 0;
  }
  bulk_words_.clear();
  ChangeGpus(bulk_gpus_, true);
  ChangeGpus(bulk_busy_, false);
  // The fingerprint changes by the first load's key and the last one's, however many steps.
  for (uint32_t d : bulk_domains_) {
    ChangeLoad(DomainId(d), bulk_mbs_[d], bulk_jobs_[d]);
    bulk_mbs_[d] = 0;
    bulk_jobs_[d] = 0;
  }
  bulk_domains_.clear();
}

void Topology::SuspendJobsAndHold(std::span<const JobId> jobs, std::vector<Suspended>& out, std::span<const GpuId> want,
                                  std::vector<GpuId>& held) {
  StartBulk();
  for (JobId job : jobs) {
    auto it = jobs_.find(job);
    if (it == jobs_.end() || it->second.suspended) continue;
    JobAlloc& alloc = it->second;
    for (GpuId g : alloc.gpus) owner_[g.value] = kNoJob;
    AddToBulk(alloc, -1);
    alloc.suspended = true;
    ++suspended_jobs_;
    out.push_back(Suspended(job, &alloc));
  }
  held.clear();
  for (GpuId g : want) {
    if (!is_free(g)) continue;
    owner_[g.value] = kHeld;
    held.push_back(g);
  }
  ByWord(held, [this](uint32_t w, uint64_t m) { MarkBulkWord(bulk_held_bits_, w, m); });
  held_gpus_ += held.size();
  ApplyBulk(true);
}

void Topology::SplitSuspended(std::span<const JobId> jobs, std::vector<Suspended>& suspended,
                              std::vector<Suspended>& resume, std::vector<JobId>& release) {
  const uint64_t mark = ++split_marks_;
  release.clear();
  for (JobId job : jobs) {
    auto it = jobs_.find(job);
    if (it == jobs_.end()) continue;
    if (it->second.suspended) {
      it->second.listed = mark;
    } else {
      release.push_back(job);
    }
  }
  resume.clear();
  std::erase_if(suspended, [&](const Suspended& s) {
    if (s.alloc_->listed == mark) return false;
    resume.push_back(s);
    return true;
  });
}

std::optional<size_t> Topology::UnholdAndResume(std::span<const GpuId> held, std::span<const Suspended> jobs) {
  StartBulk();
  for (GpuId g : held) {
    if (g.value >= gpu_count() || owner_[g.value] != kHeld ||
        ((bulk_held_bits_[g.value >> 6] >> (g.value & 63)) & 1)) {  // listed twice
      for (uint32_t w : bulk_words_) bulk_held_bits_[w] = 0;
      bulk_words_.clear();
      return std::nullopt;
    }
    AddHeldToBulk(g);
  }
  for (GpuId g : held) owner_[g.value] = kNoJob;
  held_gpus_ -= held.size();
  return ResumeJobs(jobs);  // applies the holds' change with the jobs'
}

size_t Topology::ResumeJobs(std::span<const Suspended> jobs) {
  StartBulk();
  size_t refused = 0;
  for (auto it = jobs.rbegin(); it != jobs.rend(); ++it) {
    JobAlloc& alloc = *it->alloc_;
    if (!alloc.suspended ||
        !std::all_of(alloc.gpus.begin(), alloc.gpus.end(), [&](GpuId g) { return owner_[g.value] == kNoJob; })) {
      ++refused;
      continue;
    }
    for (GpuId g : alloc.gpus) owner_[g.value] = it->job_;
    AddToBulk(alloc, +1);
    alloc.suspended = false;
    --suspended_jobs_;
  }
  ApplyBulk(false);
  return refused;
}

Status Topology::Resume(JobId job) {
  auto it = jobs_.find(job);
  if (it == jobs_.end() || !it->second.suspended) return Fail("job " + std::to_string(job), "is not suspended");
  return Resume(Suspended(job, &it->second));
}

Status Topology::Resume(const Suspended& s) {
  JobAlloc& alloc = *s.alloc_;
  if (!alloc.suspended) return Fail("job " + std::to_string(s.job_), "is not suspended");
  for (GpuId g : alloc.gpus) {
    if (owner_[g.value] != kNoJob)
      return Fail("job " + std::to_string(s.job_), "GPU " + std::to_string(g.value) + " was taken while suspended");
  }
  for (GpuId g : alloc.gpus) owner_[g.value] = s.job_;
  ChangeGpus(alloc.gpus, false);
  Charge(alloc, +1);
  alloc.suspended = false;
  --suspended_jobs_;
  return {};
}

double Topology::job_ring_gbs(JobId job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0.0 : static_cast<double>(it->second.ring_mbs) / 1000.0;
}

Status Topology::Allocate(JobId job, std::span<const GpuId> gpus, double ring_gbs) {
  return DoAllocate(job, gpus, ring_gbs, false);
}

Status Topology::Restore(JobId job, std::span<const GpuId> gpus, double ring_gbs) {
  return DoAllocate(job, gpus, ring_gbs, true);
}

Status Topology::DoAllocate(JobId job, std::span<const GpuId> gpus, double ring_gbs, bool any_node_state) {
  const std::string where = "job " + std::to_string(job);
  if (job == kNoJob) return Fail(where, "job id 0 is reserved");
  if (gpus.empty()) return Fail(where, "allocation of zero GPUs");
  if (jobs_.contains(job)) return Fail(where, "already holds GPUs");
  std::vector<GpuId> sorted(gpus.begin(), gpus.end());
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    const GpuId g = sorted[i];
    if (g.value >= gpu_count()) return Fail(where, "GPU id " + std::to_string(g.value) + " out of range");
    if (i > 0 && sorted[i - 1] == g)
      return Fail(where, "GPU " + domains_[gpu_domain_[g.value].value].name + " listed twice");
    if (any_node_state ? owner_[g.value] != kNoJob : !is_free(g)) {
      return Fail(where, "GPU " + domains_[gpu_domain_[g.value].value].name +
                             (owner_[g.value] != kNoJob ? " is held by job " + std::to_string(owner_[g.value])
                                                        : " is on an unavailable node"));
    }
  }
  if (!std::isfinite(ring_gbs) || ring_gbs < 0 || ring_gbs > 1e9)
    return Fail(where, "bad ring bandwidth " + std::to_string(ring_gbs));
  JobAlloc alloc;
  alloc.ring_mbs = std::llround(ring_gbs * 1000.0);
  // Uplinks the job's ring crosses: domains holding some but not all of its GPUs (GPU links are
  // private to the job, so they are not charged).
  if (sorted.size() > 1 && alloc.ring_mbs > 0) {
    if (scratch_count_.size() != domains_.size()) scratch_count_.assign(domains_.size(), 0);
    std::vector<DomainId> touched;
    for (GpuId g : sorted) {
      for (DomainId a = domains_[gpu_domain_[g.value].value].parent; a.valid(); a = domains_[a.value].parent) {
        if (scratch_count_[a.value]++ == 0) touched.push_back(a);
      }
    }
    for (DomainId d : touched) {
      if (scratch_count_[d.value] < sorted.size()) alloc.crossed.push_back(d);
      scratch_count_[d.value] = 0;
    }
    std::sort(alloc.crossed.begin(), alloc.crossed.end());
  }
  for (GpuId g : sorted) owner_[g.value] = job;
  ChangeGpus(sorted, false);
  for (DomainId d : alloc.crossed) ChangeLoad(d, alloc.ring_mbs, +1);
  if (journaling_) {
    Note({any_node_state ? Change::Kind::kRestore : Change::Kind::kAllocate, job, sorted, ring_gbs, NodeId(0),
          NodeState::kUp});
  }
  alloc.gpus = std::move(sorted);
  jobs_.emplace(job, std::move(alloc));
  ++version_;
  return {};
}

Status Topology::Replay(const Change& c) {
  switch (c.kind) {
    case Change::Kind::kAllocate: return DoAllocate(c.job, c.gpus, c.ring_gbs, false);
    case Change::Kind::kRestore: return DoAllocate(c.job, c.gpus, c.ring_gbs, true);
    case Change::Kind::kRelease: return Release(c.job);
    case Change::Kind::kNodeState: return SetNodeState(c.node, c.state);
  }
  return Fail("journal", "unknown change");
}

Status Topology::Release(JobId job) {
  auto it = jobs_.find(job);
  if (it == jobs_.end() || it->second.suspended) return Fail("job " + std::to_string(job), "holds no GPUs");
  for (GpuId g : it->second.gpus) owner_[g.value] = kNoJob;
  ChangeGpus(it->second.gpus, true);
  for (DomainId d : it->second.crossed) ChangeLoad(d, -it->second.ring_mbs, -1);
  jobs_.erase(it);
  Note({Change::Kind::kRelease, job, {}, 0, NodeId(0), NodeState::kUp});
  ++version_;
  ++frees_;
  return {};
}

Status Topology::SetNodeState(NodeId node, NodeState state) {
  if (node.value >= node_count()) return Fail("node " + std::to_string(node.value), "unknown node id");
  ++version_;
  Note({Change::Kind::kNodeState, 0, {}, 0, node, state});
  const NodeState old = node_state_[node.value];
  const bool was_up = old == NodeState::kUp, will_be_up = state == NodeState::kUp;
  frees_ += will_be_up && !was_up;
  if (was_up == will_be_up) {
    node_state_[node.value] = state;
    return {};
  }
  const DomainId nd = node_domain_[node.value];
  const Domain& d = domains_[nd.value];
  // Count (or uncount) the node's unowned GPUs.
  uint32_t unowned = 0;
  uint64_t* const print = print_.empty() ? nullptr : print_.data();
  uint64_t ka = 0, kb = 0;  // their fingerprint keys, for the node and above
  for (uint32_t g = d.first_gpu; g < d.first_gpu + d.gpu_count; ++g) {
    if (owner_[g] != kNoJob) continue;
    ++unowned;
    if (print) {
      ka ^= keys_[2 * g];
      kb ^= keys_[2 * g + 1];
    }
    for (DomainId a = gpu_domain_[g]; a != nd; a = domains_[a.value].parent) {
      free_[a.value] = will_be_up ? free_[a.value] + 1 : free_[a.value] - 1;
    }
  }
  for (DomainId a = nd; a.valid(); a = domains_[a.value].parent) {
    free_[a.value] = will_be_up ? free_[a.value] + unowned : free_[a.value] - unowned;
    if (print) {
      print[2 * a.value] ^= ka;
      print[2 * a.value + 1] ^= kb;
    }
    uint32_t& h = hist_[a.value * hist_stride_ + unowned];
    h = will_be_up ? h + 1 : h - 1;
    if (unowned == d.gpu_count) free_nodes_[a.value] = will_be_up ? free_nodes_[a.value] + 1 : free_nodes_[a.value] - 1;
  }
  node_state_[node.value] = state;
  return {};
}

std::string Topology::CheckInvariants() const {
  std::ostringstream out;
  const size_t n = domains_.size();
  std::vector<uint32_t> free(n, 0), free_nodes(n, 0), hist(n * hist_stride_, 0);
  std::vector<uint32_t> jobs(n, 0);
  std::vector<int64_t> mbs(n, 0);
  for (uint32_t g = 0; g < gpu_count(); ++g) {
    if (owner_[g] != kNoJob && owner_[g] != kHeld) {
      auto it = jobs_.find(owner_[g]);
      if (it == jobs_.end() || !std::binary_search(it->second.gpus.begin(), it->second.gpus.end(), GpuId(g))) {
        out << "GPU " << g << " owned by job " << owner_[g] << " which does not list it\n";
      }
    }
    if (!is_free(GpuId(g))) continue;
    for (DomainId a = gpu_domain_[g]; a.valid(); a = domains_[a.value].parent) free[a.value]++;
  }
  size_t owned = 0;
  for (const auto& [job, alloc] : jobs_) {
    if (alloc.suspended) continue;
    owned += alloc.gpus.size();
    for (GpuId g : alloc.gpus) {
      if (owner_[g.value] != job)
        out << "job " << job << " lists GPU " << g.value << " owned by " << owner_[g.value] << "\n";
    }
    for (DomainId d : alloc.crossed) {
      jobs[d.value]++;
      mbs[d.value] += alloc.ring_mbs;
    }
  }
  const size_t owners = static_cast<size_t>(
      std::count_if(owner_.begin(), owner_.end(), [](JobId j) { return j != kNoJob && j != kHeld; }));
  if (owners != owned) out << owners << " owned GPUs but jobs list " << owned << "\n";
  for (uint32_t i = 0; i < node_count(); ++i) {
    if (node_state_[i] != NodeState::kUp) continue;
    const DomainId nd = node_domain_[i];
    const uint32_t f = free[nd.value];
    for (DomainId a = nd; a.valid(); a = domains_[a.value].parent) {
      hist[a.value * hist_stride_ + f]++;
      if (f == domains_[nd.value].gpu_count) free_nodes[a.value]++;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (free[i] != free_[i])
      out << "domain " << domains_[i].name << ": free " << free_[i] << " != recomputed " << free[i] << "\n";
    if (free_nodes[i] != free_nodes_[i])
      out << "domain " << domains_[i].name << ": free_nodes " << free_nodes_[i] << " != " << free_nodes[i] << "\n";
    if (jobs[i] != load_jobs_[i])
      out << "domain " << domains_[i].name << ": crossing jobs " << load_jobs_[i] << " != " << jobs[i] << "\n";
    if (mbs[i] != load_mbs_[i])
      out << "domain " << domains_[i].name << ": crossing MB/s " << load_mbs_[i] << " != " << mbs[i] << "\n";
  }
  if (hist != hist_) out << "node free-count histograms differ\n";
  if (!print_.empty() && PrintsFromScratch() != print_) out << "fingerprints differ\n";
  for (uint32_t i = 0; !print_.empty() && i < domains_.size(); ++i) {
    if (load_keys_[2 * i] != LoadKey(i, 0) || load_keys_[2 * i + 1] != LoadKey(i, 1))
      out << "domain " << domains_[i].name << ": kept load keys differ\n";
  }
  return out.str();
}

}  // namespace phalanx
