// Topology: the cluster as an indexed tree of domains, plus who holds which GPU.
//
// Structure (immutable after Build): domains are numbered in depth-first pre-order, GPUs and
// nodes in depth-first order, so every domain covers a contiguous range of GPUs and of nodes.
// State (mutable): the owner of every GPU, node availability, and per-domain counters kept
// exact incrementally in O(depth) per GPU change: free GPUs, entirely free nodes, a histogram of
// nodes by free-GPU count, and the traffic of running jobs whose rings cross each uplink.
// A GPU is "free" when it has no owner and its node is Up.
//
// Contract: every mutating call either succeeds completely or returns an Error and leaves the
// state unchanged. Thread-safety: none; callers serialize (the core is single-threaded).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/common/ids.h"
#include "core/common/result.h"
#include "core/topology/level.h"
#include "core/topology/spec.h"

namespace phalanx {

struct Link {
  double gbs = 0;      // per direction; 0 for the root (nothing above it)
  uint32_t lanes = 0;  // 0: not lane-limited
  double lane_gbs = 0;
  LinkType type = LinkType::kNone;
};

struct Domain {
  Level level = Level::kGpu;
  std::string name;
  DomainId parent;     // invalid for the root
  uint32_t depth = 0;  // root = 0
  uint32_t first_gpu = 0, gpu_count = 0;
  uint32_t first_node = 0, node_count = 0;
  Link uplink;
  double oversubscription = 1.0;
  bool rail_optimized = false;
  std::string kind;  // groups: "nvswitch", "pcie", ...; nodes: model name
};

enum class NodeState : uint8_t { kUp, kDrain, kDown };
std::string_view NodeStateName(NodeState state);

class Topology {
  struct JobAlloc;  // below

 public:
  // Builds the tree. Fails (naming spec positions) on: no nodes, duplicate names, unknown parent,
  // parent cycles, a node model with no GPUs or GPU indices that are missing/duplicated, a node
  // whose parent is a node, non-positive or non-finite bandwidths, oversubscription < 1.
  // Several top-level switches get a synthetic root "cluster" (level core) with no links between
  // them: a job can never span two disconnected trees.
  static Result<Topology> Build(const TopologySpec& spec);

  // ---- structure -------------------------------------------------------------------------
  const std::string& name() const { return name_; }
  DomainId root() const { return DomainId(0); }
  size_t domain_count() const { return domains_.size(); }
  size_t gpu_count() const { return gpu_domain_.size(); }
  size_t node_count() const { return node_domain_.size(); }
  const Domain& domain(DomainId d) const { return domains_[d.value]; }
  std::span<const DomainId> children(DomainId d) const {
    return {children_.data() + child_begin_[d.value], child_begin_[d.value + 1] - child_begin_[d.value]};
  }
  DomainId gpu_domain(GpuId g) const { return gpu_domain_[g.value]; }
  DomainId node_domain(NodeId n) const { return node_domain_[n.value]; }
  NodeId node_of(GpuId g) const { return gpu_node_[g.value]; }
  // Index of the GPU inside its node (its rail on rail-optimized fabrics).
  uint32_t local_index(GpuId g) const { return gpu_local_[g.value]; }
  // The GPU of node `n` with local index `local`; invalid if there is none.
  GpuId node_gpu(NodeId n, uint32_t local) const;
  uint32_t node_gpu_count(NodeId n) const { return domain(node_domain(n)).gpu_count; }
  uint32_t max_gpus_per_node() const { return max_gpus_per_node_; }
  // The domain `d` or its ancestor at exactly depth `depth` (depth <= depth of d).
  DomainId ancestor_at_depth(DomainId d, uint32_t depth) const;
  DomainId lowest_common_ancestor(DomainId a, DomainId b) const;
  bool contains(DomainId outer, GpuId g) const {
    const Domain& o = domains_[outer.value];
    return g.value >= o.first_gpu && g.value < o.first_gpu + o.gpu_count;
  }
  // nullopt-like: invalid id when unknown.
  DomainId find(std::string_view name) const;
  NodeId find_node(std::string_view name) const;
  int count_at_level(Level level) const;

  // ---- state -----------------------------------------------------------------------------
  JobId owner(GpuId g) const { return owner_[g.value]; }
  NodeState node_state(NodeId n) const { return node_state_[n.value]; }
  bool is_free(GpuId g) const {
    return owner_[g.value] == kNoJob && node_state_[gpu_node_[g.value].value] == NodeState::kUp;
  }
  uint32_t free_gpus(DomainId d) const { return free_[d.value]; }
  uint32_t free_nodes(DomainId d) const { return free_nodes_[d.value]; }
  // Number of Up nodes below `d` with exactly `f` free GPUs (f <= max_gpus_per_node()).
  uint32_t nodes_with_free(DomainId d, uint32_t f) const { return hist_[d.value * hist_stride_ + f]; }
  // Traffic of running jobs whose rings cross the uplink of `d` (GB/s), and how many jobs.
  double crossing_gbs(DomainId d) const { return static_cast<double>(load_mbs_[d.value]) / 1000.0; }
  uint32_t crossing_jobs(DomainId d) const { return load_jobs_[d.value]; }
  // A fingerprint of the state below `d` that placement reads: which GPUs are free, and every
  // uplink's crossing traffic (jobs and GB/s), `d`'s own included. Two moments with the same
  // fingerprint see the same free GPUs and loads below `d` (up to a 2^-128 chance per pair: two
  // independent 64-bit Zobrist hashes, kept in O(depth) per change like the counters above), so
  // a search confined to `d` finds the same at both (Placer's memo of regions with no fit).
  // Kept from the first call on: a Topology nobody asks pays nothing for them. Only for domains
  // of node level and above (the GPUs and groups inside a node have none of their own: what
  // changes there is counted at the node; zero for them).
  struct Fingerprint {
    uint64_t a = 0, b = 0;
    bool operator==(const Fingerprint&) const = default;
  };
  Fingerprint fingerprint(DomainId d) const {
    if (print_.empty()) StartPrints();
    return {print_[2 * d.value], print_[2 * d.value + 1]};
  }
  // The parts of a fingerprint, for a caller that follows a state the Topology is not in (Reserve's
  // walk: the state at a later time, kept as counts): GPU g's part while it is free; the part of
  // a crossing load of `mbs` and `jobs` at d (nothing for no load), which goes into the
  // fingerprints of print_domain(d) and every domain above it (d's node when d is inside one,
  // else d); the load at d now, exactly.
  Fingerprint gpu_key(GpuId g) const {
    if (print_.empty()) StartPrints();
    return {keys_[2 * g.value], keys_[2 * g.value + 1]};
  }
  Fingerprint load_key(DomainId d, int64_t mbs, uint32_t jobs) const {
    if (print_.empty()) StartPrints();
    return {LoadKeyOf(d.value, 0, mbs, jobs), LoadKeyOf(d.value, 1, mbs, jobs)};
  }
  DomainId print_domain(DomainId d) const { return AtNodeOrAbove(d); }
  int64_t crossing_mbs(DomainId d) const { return load_mbs_[d.value]; }
  // A running job's ring as charged to the uplinks: the domains it crosses (a domain once per
  // crossing) and the load of each crossing in MB/s. Nothing for a job without GPUs here or
  // suspended.
  struct RingLoad {
    std::span<const DomainId> crossed;
    int64_t mbs = 0;
  };
  RingLoad job_ring(JobId job) const;

  // Gives `gpus` to `job`. Fails, changing nothing, if the job already holds GPUs, a GPU id is
  // out of range or repeated, or a GPU is not free. `ring_gbs` is the job's predicted ring
  // bandwidth; it is charged to every uplink the job crosses (see bandwidth_model.h).
  Status Allocate(JobId job, std::span<const GpuId> gpus, double ring_gbs);
  // As Allocate, but GPUs on drained/down nodes are accepted when unowned: for putting back
  // jobs that keep running on a drained node (what-if undo, restart recovery).
  Status Restore(JobId job, std::span<const GpuId> gpus, double ring_gbs);
  // Returns all GPUs of `job`. Fails if the job holds none.
  Status Release(JobId job);
  // What-if support: Hold takes free GPUs out of use without a job (owner kHeld), Unhold gives
  // them back; O(depth) per GPU. Both fail, changing nothing, on a GPU in the wrong state.
  static constexpr JobId kHeld = ~JobId{0};
  // Load from outside the core (Scheduler::SetExternalLoad): one owner per node, above every
  // job id (jobs are 1..2^62-1) and below kHeld.
  static constexpr JobId kExternalBase = JobId{1} << 62;
  // One owner per piece of a node's load (Scheduler::SetExternalLoad: one piece per outside job,
  // up to kExternalPieces a node).
  static constexpr uint32_t kExternalPieces = 64;
  static constexpr JobId ExternalOwner(NodeId n, uint32_t piece = 0) {
    return kExternalBase + JobId{n.value} * kExternalPieces + piece;
  }
  static constexpr bool IsExternal(JobId owner) { return owner >= kExternalBase && owner != kHeld; }
  Status Hold(std::span<const GpuId> gpus);
  Status Unhold(std::span<const GpuId> gpus);
  // What-if support: Suspend gives a job's GPUs back (free again, its traffic uncharged) but
  // keeps its record; Resume takes them again. Resume fails, changing nothing, if a GPU was
  // taken meanwhile. Suspended jobs are not listed by job_gpus() and cannot be released.
  Status Suspend(JobId job);
  Status Resume(JobId job);
  // The same, for a caller that resumes every job it suspended (WhatIf): Suspend tells where the
  // job's record is (none when it would fail), and Resume takes it from there without looking
  // the job up again. Valid while the job stays suspended (a suspended job cannot be released).
  class Suspended {
   public:
    JobId job() const { return job_; }

   private:
    friend class Topology;
    Suspended(JobId job, JobAlloc* alloc) : job_(job), alloc_(alloc) {}
    JobId job_;
    JobAlloc* alloc_;
  };
  std::optional<Suspended> SuspendJob(JobId job);
  Status Resume(const Suspended& s);
  // Many at once, as a WhatIf makes and undoes them: the same counters as one call each, but
  // each node and each crossed domain changes once (under a long queue a what-if releases
  // hundreds of jobs), and a GPU released and held in the same change touches no counter.
  // - SuspendJobsAndHold: SuspendJob on each of `jobs` (those it would refuse left out), the
  //   handles appended to `out`, then Hold on those of `want` free by then, listed in `held`.
  // - ResumeJobs: Resume on each of `jobs`, the last first (those refused stay suspended;
  //   returns how many).
  // - UnholdAndResume: Unhold on `held`, then ResumeJobs; refused, changing nothing, unless
  //   every GPU of `held` is held and listed once.
  void SuspendJobsAndHold(std::span<const JobId> jobs, std::vector<Suspended>& out, std::span<const GpuId> want,
                          std::vector<GpuId>& held);
  size_t ResumeJobs(std::span<const Suspended> jobs);
  // For a caller that keeps jobs suspended from one what-if to the next (WhatIf::Retarget), with
  // `suspended` the handles of those it suspended: moves to `resume` the handles of the jobs
  // `jobs` does not list, and lists in `release` the jobs of `jobs` not suspended yet.
  void SplitSuspended(std::span<const JobId> jobs, std::vector<Suspended>& suspended, std::vector<Suspended>& resume,
                      std::vector<JobId>& release);
  std::optional<size_t> UnholdAndResume(std::span<const GpuId> held, std::span<const Suspended> jobs);

  // The GPUs a job holds (empty if none), and the ring bandwidth it was charged with.
  std::span<const GpuId> job_gpus(JobId job) const;
  double job_ring_gbs(JobId job) const;
  size_t job_count() const { return jobs_.size(); }

  // Drain/Down make a node's GPUs unavailable for new work (running jobs keep them).
  Status SetNodeState(NodeId node, NodeState state);

  // ---- a follower's record (WalkTwin) ----
  // The changes that stay (Allocate, Restore, Release, SetNodeState), in order, since
  // StartJournal or the last ClearJournal: a copy of this Topology made at StartJournal becomes
  // this one again by the same calls (Replay). Past kJournalMax changes the record stops
  // (journal_full) and the follower copies the Topology anew.
  struct Change {
    enum class Kind : uint8_t { kAllocate, kRestore, kRelease, kNodeState };
    Kind kind = Kind::kRelease;
    JobId job = 0;
    std::vector<GpuId> gpus;
    double ring_gbs = 0;
    NodeId node;
    NodeState state = NodeState::kUp;
  };
  static constexpr size_t kJournalMax = 4096;
  void StartJournal() {
    journaling_ = true;
    ClearJournal();
  }
  void StopJournal() {
    journaling_ = false;
    ClearJournal();
  }
  void ClearJournal() {
    journal_.clear();
    journal_full_ = false;
  }
  const std::vector<Change>& journal() const { return journal_; }
  bool journal_full() const { return journal_full_; }
  Status Replay(const Change& c);

  // Changes that stay (Allocate, Restore, Release, SetNodeState) give the state a new number;
  // what-if changes (Hold, Suspend) are counted while they are in force. So two moments with the
  // same version() and no what-if in force see the same Topology: an answer computed from it at
  // one holds at the other (Scheduler's pass caches some that way).
  uint64_t version() const { return version_; }
  // Of those, the ones that can make a GPU free (Release; a node back up): a caller that keeps
  // free GPUs held across other changes (StartBlocks) knows whether one it wants came free.
  uint64_t frees() const { return frees_; }
  bool no_what_if() const { return held_gpus_ == 0 && suspended_jobs_ == 0; }
  // The GPUs held by what-if changes in force, and whether no job is suspended.
  uint64_t held_gpus() const { return held_gpus_; }
  bool none_suspended() const { return suspended_jobs_ == 0; }

  // Recomputes every counter from scratch and compares; empty string when consistent.
  // For tests and debug checks; O(domains * depth).
  std::string CheckInvariants() const;

 private:
  friend class TopologyBuilder;
  struct JobAlloc {
    std::vector<GpuId> gpus;
    std::vector<DomainId> crossed;
    int64_t ring_mbs = 0;
    bool suspended = false;
    uint64_t listed = 0;  // SplitSuspended's mark
  };
  void Charge(const JobAlloc& alloc, int sign);
  // The many-at-once changes: a job's GPUs and its load change, or a GPU held or given back,
  // added to the pending change, and the pending change made (ChangeGpus on the GPUs in order,
  // ChangeLoad once per domain).
  void AddToBulk(const JobAlloc& alloc, int sign);
  void AddHeldToBulk(GpuId g);
  void StartBulk();  // the bulk bits made (once; StartBulk first in every bulk change)
  void MarkBulkWord(std::vector<uint64_t>& bits, uint32_t w, uint64_t m);
  // `jobs_free`: the jobs' GPUs become free and the held ones busy (else the other way round);
  // a GPU among both changes nothing.
  void ApplyBulk(bool jobs_free);
  Status DoAllocate(JobId job, std::span<const GpuId> gpus, double ring_gbs, bool any_node_state);
  // Counters for GPUs that become free or busy (no-op on unavailable nodes); O(depth) per node
  // touched plus O(levels below the node) per GPU.
  void ChangeGpus(std::span<const GpuId> gpus, bool becomes_free);
  void ChangeNodeFree(NodeId n, uint32_t before, uint32_t after, uint32_t total);
  // A crossing load change at d (and its part in the fingerprints).
  void ChangeLoad(DomainId d, int64_t mbs, int jobs);
  // Fingerprints: the keys, then every domain's print (when first asked); every print recounted
  // (StartPrints, CheckInvariants); a domain's load key (half 0: a, 1: b).
  void StartPrints() const;
  std::vector<uint64_t> PrintsFromScratch() const;
  uint64_t LoadKeyOf(uint32_t domain, int half, int64_t mbs, uint32_t jobs) const;
  uint64_t LoadKey(uint32_t domain, int half) const;
  DomainId AtNodeOrAbove(DomainId d) const;  // d, or its node when d is inside one
  uint32_t node_free(NodeId n) const { return free_[node_domain_[n.value].value]; }

  std::string name_;
  std::vector<Domain> domains_;
  std::vector<uint32_t> child_begin_;  // size domains+1, into children_
  std::vector<DomainId> children_;
  std::vector<DomainId> gpu_domain_;
  std::vector<NodeId> gpu_node_;
  std::vector<uint16_t> gpu_local_;
  std::vector<DomainId> node_domain_;
  std::unordered_map<std::string, DomainId> by_name_;
  uint32_t max_gpus_per_node_ = 0;
  uint64_t version_ = 0;
  uint64_t frees_ = 0;
  uint64_t split_marks_ = 0;  // SplitSuspended's calls
  bool journaling_ = false, journal_full_ = false;
  std::vector<Change> journal_;
  // Appends a change to the journal, when one is kept and not full.
  void Note(Change c) {
    if (!journaling_ || journal_full_) return;
    if (journal_.size() >= kJournalMax) {
      journal_full_ = true;
      journal_.clear();
      return;
    }
    journal_.push_back(std::move(c));
  }
  uint64_t held_gpus_ = 0;       // owned by kHeld (Hold less Unhold)
  uint32_t suspended_jobs_ = 0;  // Suspend less Resume
  uint32_t hist_stride_ = 1;

  std::vector<JobId> owner_;
  std::vector<NodeState> node_state_;
  std::vector<uint32_t> free_;
  std::vector<uint32_t> free_nodes_;
  std::vector<uint32_t> hist_;
  std::vector<int64_t> load_mbs_;  // integer MB/s: sums and differences stay exact
  std::vector<uint32_t> load_jobs_;
  mutable std::vector<uint64_t> print_;      // per domain: fingerprint a, b; empty until asked
  mutable std::vector<uint64_t> keys_;       // Zobrist keys a, b: per GPU, then per domain
  mutable std::vector<uint64_t> load_keys_;  // per domain: its load's part a, b (LoadKey) while printing
  std::unordered_map<JobId, JobAlloc> jobs_;
  std::vector<uint32_t> scratch_count_;  // Allocate's per-domain counts, all 0 between calls
  // The pending change of the many-at-once changes, all clear between calls: its GPUs as bits (the
  // words listed in bulk_words_), and its load change per crossed domain (listed in
  // bulk_domains_).
  std::vector<uint64_t> bulk_bits_, bulk_held_bits_;  // the jobs' GPUs; those held or given back
  std::vector<uint32_t> bulk_words_;
  std::vector<GpuId> bulk_gpus_, bulk_busy_;
  std::vector<int64_t> bulk_mbs_;
  std::vector<int32_t> bulk_jobs_;
  std::vector<uint32_t> bulk_domains_;
};

}  // namespace phalanx
