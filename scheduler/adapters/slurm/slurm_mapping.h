// The pure part of phalanxd's Slurm mode: which Slurm jobs are Phalanx's ("managed"), what
// their AdminComment tag asks for, the core JobSpec of a managed job, and the Slurm node list
// of a placement. No Slurm, no I/O.
//
// The tag is what config/slurm/job_submit.lua writes: "phalanx:" followed by the plugin's
// normalised options, comma-separated ("topology=leaf:prefer,elastic=2:8,checkpoint=10@120,
// preemptible=1,class=high") or "partition=NAME" for a job managed by its partition.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/slurm/slurm_types.h"
#include "core/common/ids.h"
#include "core/common/result.h"
#include "core/sched/job.h"
#include "core/topology/topology.h"

namespace phalanx::slurm {

// The options of a managed job (unset fields: the core's defaults).
struct ManagedOptions {
  std::optional<Level> level;  // --phx-topology (any: kCore)
  bool prefer = false;         // ":prefer"
  uint32_t elastic_min = 0, elastic_max = 0;
  int checkpoint_signal = 0;  // 0: none given
  Duration checkpoint_warning = 0;
  std::optional<bool> preemptible;
  std::string priority_class;
  std::string partition;  // managed by its partition (no --phx-* option)
};

// Parses "phalanx:..." (the text after "phalanx:"). Fails on an unknown key or a bad value,
// naming it ("job 12: AdminComment phalanx:topology=rack: 'rack' is not a level").
Result<ManagedOptions> ParsePhalanxTag(std::string_view admin_comment, std::string_view where);
// Slurm's credential lifetime from slurm.conf's AuthInfo ("socket=/x,cred_expire=30"), read as
// Slurm 22.05 reads it (slurm_cred.c: the value after "cred_expire=", any case; none, or under
// 5: the default 120).
inline constexpr Duration kDefaultCredExpire = 120;
Duration CredExpire(std::string_view authinfo);
inline bool HasPhalanxTag(std::string_view admin_comment) { return admin_comment.starts_with("phalanx:"); }

// What makes a job managed besides its tag (the `slurm:` section of the daemon's config).
struct ManagedRule {
  std::set<std::string> partitions;  // every job of these partitions
  std::set<std::string> qos;         // every job with one of these QOS
};
// The job's options when it is managed (its tag, else its partition or QOS); nullopt when it is
// not. A bad tag is an Error (the job is then left to Slurm, and the daemon logs it once).
Result<std::optional<ManagedOptions>> ManagedBy(const SlurmJob& job, const ManagedRule& rule);

// A Slurm job's name as the core takes it (Slurm allows any bytes; the core refuses control
// characters and invalid UTF-8): Printable (util/printable.h), cut to 256 bytes at a
// character boundary.
std::string SlurmName(std::string_view name);

// The core's spec for a managed job: the shape from -N/--gres=gpu:G (nodes x G), or --gpus=T
// without -N (T GPUs anywhere the level allows); the walltime from --time; user from
// `user`, the name SlurmName's. Fails on a job that asks for no GPU ("job 12: asks for no GPUs (--gres=gpu:N or
// --gpus=N)").
Result<JobSpec> ToJobSpec(const SlurmJob& job, const ManagedOptions& options, const std::string& user);

// The nodes of `gpus`, sorted by name as Slurm sorts a ReqNodeList (SLURM_JOB_NODELIST is
// alphabetical whatever order Phalanx chose; the topology order is TopologyOrder's).
std::vector<std::string> SlurmNodeList(const Topology& topo, const std::vector<GpuId>& gpus);
// The same nodes in topology (DFS) order: the order Phalanx ranks them in.
std::vector<std::string> TopologyOrder(const Topology& topo, const std::vector<GpuId>& gpus);

// GPUs busy on each node because of jobs Phalanx does not place (running, suspended or
// completing unmanaged jobs), with the latest expected end among them: per node, Slurm's
// allocation detail (SlurmJob::gpus_by_node) when it has one, else --gres=gpu:G, else --gpus=T
// spread evenly (rounded up). Jobs without GPUs on a node are not listed for it. The daemon
// gives each node's count to the core as external load (Scheduler::SetExternalLoad): the rest
// of the node stays placeable.
// The GPUs a job holds on each of its nodes (in `nodes`' order): Slurm's allocation detail when it
// has one, else --gres=gpu:G, else --gpus=T spread evenly (rounded up); 0 for a CPU-only job.
std::vector<uint32_t> GpusByNode(const SlurmJob& job);
// Running, suspended or completing on some nodes.
bool HoldsNodes(const SlurmJob& job);
struct ExternalLoad {
  uint32_t gpus = 0;
  Time until = 0;                // the latest end
  std::vector<SlurmJobId> jobs;  // sorted
  // One per job: its GPUs there and its own expected end (in `jobs`' order).
  std::vector<std::pair<uint32_t, Time>> pieces;
};
std::map<std::string, ExternalLoad> ExternalLoadByNode(const std::vector<SlurmJob>& unmanaged);

}  // namespace phalanx::slurm
