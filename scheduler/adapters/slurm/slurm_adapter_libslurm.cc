// SlurmAdapter over libslurm's C API (slurm.h), as shipped with the Slurm this phalanxd is built
// against. Written against 22.05 (libslurm.so.38); the fields used exist unchanged up to 24.x
// except where marked with SLURM_VERSION_NUMBER. Every call is one slurmctld RPC.
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/slurm_version.h>
#include <sys/wait.h>

#include <csignal>

#include <cstdio>
#include <cstring>
#include <mutex>

#include "adapters/slurm/slurm_adapter.h"
#include "adapters/slurm/slurm_mapping.h"
#include "adapters/slurm/slurm_tres.h"
#include "util/hostlist.h"

namespace phalanx::slurm {
namespace {

std::string Str(const char* s) { return s != nullptr ? std::string(s) : std::string(); }

std::unexpected<Error> SlurmFail(const std::string& what) {
  const int e = slurm_get_errno();
  const ErrorCode code = e == ESLURM_INVALID_JOB_ID ? ErrorCode::kNotFound
                         : (e == ESLURM_JOB_NOT_PENDING || e == ESLURM_JOB_PENDING || e == ESLURM_DISABLED ||
                            e == ESLURM_BATCH_ONLY || e == ESLURM_ALREADY_DONE)
                             ? ErrorCode::kFailedPrecondition
                             : ErrorCode::kInternal;
  return Fail(code, "slurm: " + what, slurm_strerror(e));
}

SlurmJobState JobState(uint32_t s) {
  switch (s & JOB_STATE_BASE) {
    case JOB_PENDING: return SlurmJobState::kPending;
    case JOB_RUNNING: return SlurmJobState::kRunning;
    case JOB_SUSPENDED: return SlurmJobState::kSuspended;
    case JOB_COMPLETE: return SlurmJobState::kCompleted;
    case JOB_CANCELLED: return SlurmJobState::kCancelled;
    case JOB_FAILED: return SlurmJobState::kFailed;
    case JOB_TIMEOUT: return SlurmJobState::kTimeout;
    case JOB_NODE_FAIL: return SlurmJobState::kNodeFail;
    case JOB_PREEMPTED: return SlurmJobState::kPreempted;
    case JOB_BOOT_FAIL: return SlurmJobState::kBootFail;
    case JOB_DEADLINE: return SlurmJobState::kDeadline;
    case JOB_OOM: return SlurmJobState::kOutOfMemory;
    default: return SlurmJobState::kOther;
  }
}

std::pair<SlurmWait, std::string> Wait(uint16_t r) {
  switch (r) {
    case WAIT_NO_REASON: return {SlurmWait::kNone, "None"};
    case WAIT_TIME: return {SlurmWait::kBeginTime, "BeginTime"};
    case WAIT_HELD_USER: return {SlurmWait::kHeldUser, "JobHeldUser"};
    case WAIT_HELD: return {SlurmWait::kHeldAdmin, "JobHeldAdmin"};
    case WAIT_RESOURCES: return {SlurmWait::kResources, "Resources"};
    case WAIT_PRIORITY: return {SlurmWait::kOther, "Priority"};
    case WAIT_NODE_NOT_AVAIL: return {SlurmWait::kOther, "ReqNodeNotAvail"};
    default: return {SlurmWait::kOther, "reason " + std::to_string(r)};
  }
}

std::vector<std::string> Expand(const char* hostlist) {
  if (hostlist == nullptr || *hostlist == '\0') return {};
  auto names = ExpandHostlist(hostlist, "slurm nodelist");
  return names ? std::move(*names) : std::vector<std::string>{};
}

// One job of slurm_load_jobs / slurm_load_job (loaded with SHOW_DETAIL).
SlurmJob ToJob(const slurm_job_info_t& j) {
  SlurmJob job;
  job.id = j.job_id;
  job.name = Str(j.name);
  job.uid = j.user_id;
  job.user = Str(j.user_name);
  job.state = JobState(j.job_state);
  job.completing = (j.job_state & JOB_COMPLETING) != 0;
  std::tie(job.wait, job.reason) = Wait(j.state_reason);
  job.priority = j.priority;
  job.admin_comment = Str(j.admin_comment);
  job.comment = Str(j.comment);
  job.partition = Str(j.partition);
  job.qos = Str(j.qos);
  job.account = Str(j.account);
  job.num_nodes = j.num_nodes;
  job.gpus_per_node = GpusInTres(Str(j.tres_per_node));
  job.gpus_per_job = GpusInTres(Str(j.tres_per_job));
  job.time_limit = (j.time_limit == INFINITE || j.time_limit == NO_VAL) ? 0 : Duration{j.time_limit} * 60;
  job.submit = j.submit_time;
  job.start = j.start_time;
  job.end = j.end_time;
  job.nodes = Expand(j.nodes);
  // One GRES detail per allocated node, in the node list's order ("gpu:2(IDX:0-1)").
  if (j.gres_detail_cnt == job.nodes.size() && j.gres_detail_str != nullptr) {
    for (uint32_t k = 0; k < j.gres_detail_cnt; ++k) job.gpus_by_node.push_back(GpusInGres(Str(j.gres_detail_str[k])));
  }
  job.req_nodes = Str(j.req_nodes);
  job.batch_host = Str(j.batch_host);
  job.restarts = j.restart_cnt;
  job.exit_code = WIFEXITED(j.exit_code) ? WEXITSTATUS(j.exit_code) : 0;
  job.exit_signal = WIFSIGNALED(j.exit_code) ? WTERMSIG(j.exit_code) : 0;
  job.requeue_allowed = j.requeue != 0;
  return job;
}

class LibslurmAdapter final : public SlurmAdapter {
 public:
  std::string version() const override {
    char v[32];
    std::snprintf(v, sizeof v, "%d.%02d.%d (libslurm)", SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER),
                  SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER), SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER));
    return v;
  }

  Result<std::vector<SlurmNode>> LoadNodes() override {
    node_info_msg_t* msg = nullptr;
    if (slurm_load_node(0, &msg, SHOW_ALL) != SLURM_SUCCESS) return SlurmFail("slurm_load_node");
    std::vector<SlurmNode> out;
    for (uint32_t i = 0; i < msg->record_count; ++i) {
      const node_info_t& n = msg->node_array[i];
      if (n.name == nullptr) continue;
      SlurmNode node;
      node.name = n.name;
      const uint32_t base = n.node_state & NODE_STATE_BASE;
      node.down = base == NODE_STATE_DOWN || base == NODE_STATE_FUTURE || base == NODE_STATE_UNKNOWN ||
                  (n.node_state &
                   (NODE_STATE_FAIL | NODE_STATE_NO_RESPOND | NODE_STATE_POWERED_DOWN | NODE_STATE_INVALID_REG)) != 0;
      node.drained = (n.node_state & (NODE_STATE_DRAIN | NODE_STATE_MAINT)) != 0;
      node.gpus = GpusInGres(Str(n.gres));
      node.reason = Str(n.reason);
      out.push_back(std::move(node));
    }
    slurm_free_node_info_msg(msg);
    return out;
  }

  Result<std::vector<SlurmPartition>> LoadPartitions() override {
    partition_info_msg_t* msg = nullptr;
    if (slurm_load_partitions(0, &msg, SHOW_ALL) != SLURM_SUCCESS) return SlurmFail("slurm_load_partitions");
    std::vector<SlurmPartition> out;
    for (uint32_t i = 0; i < msg->record_count; ++i) {
      const partition_info_t& p = msg->partition_array[i];
      SlurmPartition part{Str(p.name), Expand(p.nodes)};
      const uint16_t up = p.state_up;
      part.state = up == PARTITION_UP      ? SlurmPartitionState::kUp
                   : up == PARTITION_DRAIN ? SlurmPartitionState::kDrain
                   : up == PARTITION_DOWN  ? SlurmPartitionState::kDown
                                           : SlurmPartitionState::kInactive;
      part.is_default = (p.flags & PART_FLAG_DEFAULT) != 0;
      // Minutes; INFINITE (and NO_VAL: not set) is no limit.
      if (p.max_time != INFINITE && p.max_time != NO_VAL) part.max_time = Duration{p.max_time} * 60;
      out.push_back(std::move(part));
    }
    slurm_free_partition_info_msg(msg);
    return out;
  }

  Result<std::vector<SlurmJob>> LoadJobs() override {
    job_info_msg_t* msg = nullptr;
    // SHOW_DETAIL: the per-node GRES detail (gres_detail_str), as `scontrol -d show job` shows it.
    if (slurm_load_jobs(0, &msg, SHOW_ALL | SHOW_DETAIL) != SLURM_SUCCESS) return SlurmFail("slurm_load_jobs");
    std::vector<SlurmJob> out;
    out.reserve(msg->record_count);
    for (uint32_t i = 0; i < msg->record_count; ++i) out.push_back(ToJob(msg->job_array[i]));
    slurm_free_job_info_msg(msg);
    return out;
  }

  Result<SlurmJob> LoadJob(SlurmJobId id) override {
    job_info_msg_t* msg = nullptr;
    if (slurm_load_job(&msg, id, SHOW_DETAIL) != SLURM_SUCCESS)
      return SlurmFail("slurm_load_job " + std::to_string(id));
    if (msg->record_count == 0) {
      slurm_free_job_info_msg(msg);
      return Fail(ErrorCode::kNotFound, "slurm: slurm_load_job " + std::to_string(id), "no such job");
    }
    SlurmJob job = ToJob(msg->job_array[0]);
    slurm_free_job_info_msg(msg);
    return job;
  }

  Status StartOn(SlurmJobId id, const std::vector<std::string>& nodes, Time begin,
                 const std::string& comment) override {
    std::string list;
    for (const std::string& n : nodes) list += (list.empty() ? "" : ",") + n;
    job_desc_msg_t d;
    slurm_init_job_desc_msg(&d);
    d.job_id = id;
    d.req_nodes = list.data();
    d.min_nodes = static_cast<uint32_t>(nodes.size());
    d.begin_time = begin;  // 0 would mean "unchanged": the caller passes now
    std::string c = comment;
    if (!c.empty()) d.comment = c.data();
    if (slurm_update_job(&d) != SLURM_SUCCESS)
      return SlurmFail("update job " + std::to_string(id) + " ReqNodeList=" + list);
    return {};
  }

  Status ShrinkTo(SlurmJobId id, const std::vector<std::string>& nodes) override {
    std::string list;
    for (const std::string& n : nodes) list += (list.empty() ? "" : ",") + n;
    job_desc_msg_t d;
    slurm_init_job_desc_msg(&d);
    d.job_id = id;
    d.req_nodes = list.data();  // a running job's NodeList: shrink to these nodes
    if (slurm_update_job(&d) != SLURM_SUCCESS)
      return SlurmFail("update job " + std::to_string(id) + " NodeList=" + list);
    return {};
  }

  Status Defer(SlurmJobId id, Time until, bool clear_nodes) override {
    job_desc_msg_t d;
    slurm_init_job_desc_msg(&d);
    d.job_id = id;
    d.begin_time = until;
    std::string empty;
    if (clear_nodes) d.req_nodes = empty.data();  // "" clears ReqNodeList
    if (slurm_update_job(&d) != SLURM_SUCCESS) return SlurmFail("update job " + std::to_string(id) + " StartTime");
    return {};
  }

  Status Requeue(SlurmJobId id) override {
    if (slurm_requeue(id, 0) != SLURM_SUCCESS) return SlurmFail("requeue job " + std::to_string(id));
    return {};
  }

  Status Signal(SlurmJobId id, int signal, bool batch) override {
    if (slurm_kill_job(id, static_cast<uint16_t>(signal), batch ? KILL_FULL_JOB : 0) != SLURM_SUCCESS)
      return SlurmFail("signal " + std::to_string(signal) + " to job " + std::to_string(id));
    return {};
  }

  Status Cancel(SlurmJobId id) override {
    if (slurm_kill_job(id, SIGKILL, 0) != SLURM_SUCCESS) return SlurmFail("cancel job " + std::to_string(id));
    return {};
  }

  Status SetComment(SlurmJobId id, const std::string& comment) override {
    std::string c = comment;
    job_desc_msg_t d;
    slurm_init_job_desc_msg(&d);
    d.job_id = id;
    d.comment = c.data();
    if (slurm_update_job(&d) != SLURM_SUCCESS) return SlurmFail("update job " + std::to_string(id) + " Comment");
    return {};
  }

  Result<Duration> CredentialLifetime() override {
    slurm_conf_t* conf = nullptr;  // slurm_ctl_conf_t before 20.11
    if (slurm_load_ctl_conf(0, &conf) != SLURM_SUCCESS) return SlurmFail("slurm_load_ctl_conf");
    const Duration d = CredExpire(Str(conf->authinfo));
    slurm_free_ctl_conf(conf);
    return d;
  }
};

}  // namespace

Result<std::unique_ptr<SlurmAdapter>> OpenLibslurm(const std::string& slurm_conf) {
  static std::once_flag once;
  std::call_once(once, [&] { slurm_init(slurm_conf.empty() ? nullptr : slurm_conf.c_str()); });
  return std::unique_ptr<SlurmAdapter>(new LibslurmAdapter());
}

}  // namespace phalanx::slurm
