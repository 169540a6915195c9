// A Slurm that tests set up by hand: nodes and jobs as plain values, and every action recorded.
// Behaves as 22.05 does where the executor depends on it: StartOn/Defer only on pending jobs,
// Requeue puts a running job back to pending (restarts + 1), Cancel ends it.
// Thread-safety: called from the executor's worker thread; tests change it only while no call is
// in flight (SlurmExecutor::in_flight() == 0), or through `gate` (loads wait until it is ready).
#pragma once

#include <algorithm>
#include <atomic>
#include <future>
#include <string>
#include <vector>

#include "adapters/slurm/slurm_adapter.h"

namespace phalanx::slurm {

class FakeSlurm final : public SlurmAdapter {
 public:
  struct Call {
    std::string what;  // "start", "defer", "shrink", "requeue", "signal", "cancel", "comment"
    SlurmJobId job = 0;
    std::vector<std::string> nodes;
    Time time = 0;
    bool clear = false;
    std::string text;
  };

  std::vector<SlurmNode> nodes;
  std::vector<SlurmJob> jobs;
  std::vector<SlurmPartition> partitions;  // none: Slurm mode keeps the configured partitions
  std::vector<Call> calls;
  bool down = false;                // slurmctld unreachable
  std::shared_future<void> gate;    // when valid: LoadJobs waits for it (a slurmctld that does not answer)
  std::atomic<int> loads{0};        // LoadJobs calls answered
  std::atomic<int> job_loads{0};    // LoadJob calls
  bool requeue_completing = false;  // a requeued job stays completing until the test clears it
  Duration cred_expire = 120;       // AuthInfo's cred_expire; 0: slurm_load_ctl_conf fails
  std::atomic<int> conf_loads{0};   // CredentialLifetime calls

  SlurmJob* job(SlurmJobId id) {
    for (SlurmJob& j : jobs)
      if (j.id == id) return &j;
    return nullptr;
  }
  std::vector<Call> Calls(const std::string& what) const {
    std::vector<Call> out;
    for (const Call& c : calls)
      if (c.what == what) out.push_back(c);
    return out;
  }

  std::string version() const override { return "fake"; }
  Result<std::vector<SlurmNode>> LoadNodes() override {
    if (down) return Fail(ErrorCode::kInternal, "slurm: slurm_load_node", "Unable to contact slurm controller");
    return nodes;
  }
  Result<std::vector<SlurmPartition>> LoadPartitions() override {
    if (down) return Fail(ErrorCode::kInternal, "slurm: slurm_load_partitions", "Unable to contact slurm controller");
    return partitions;
  }
  Result<std::vector<SlurmJob>> LoadJobs() override {
    if (gate.valid()) gate.wait();
    ++loads;
    if (down) return Fail(ErrorCode::kInternal, "slurm: slurm_load_jobs", "Unable to contact slurm controller");
    return jobs;
  }
  Result<SlurmJob> LoadJob(SlurmJobId id) override {
    ++job_loads;
    if (down) return Fail(ErrorCode::kInternal, "slurm: slurm_load_job", "Unable to contact slurm controller");
    if (const SlurmJob* j = job(id)) return *j;
    return Fail(ErrorCode::kNotFound, "slurm: slurm_load_job", "Invalid job id specified");
  }
  Status StartOn(SlurmJobId id, const std::vector<std::string>& n, Time begin, const std::string& comment) override {
    SlurmJob* j = job(id);
    if (j == nullptr) return Fail(ErrorCode::kNotFound, "slurm: update job", "Invalid job id specified");
    if (j->state != SlurmJobState::kPending)
      return Fail(ErrorCode::kFailedPrecondition, "slurm: update job", "Job is no longer pending execution");
    std::string list;
    for (const std::string& x : n) list += (list.empty() ? "" : ",") + x;
    j->req_nodes = list;
    if (!comment.empty()) j->comment = comment;
    calls.push_back(Call{"start", id, n, begin, false, comment});
    return {};
  }
  Status Defer(SlurmJobId id, Time until, bool clear) override {
    SlurmJob* j = job(id);
    if (j == nullptr) return Fail(ErrorCode::kNotFound, "slurm: update job", "Invalid job id specified");
    if (j->state != SlurmJobState::kPending)
      return Fail(ErrorCode::kFailedPrecondition, "slurm: update job", "Job is no longer pending execution");
    if (clear) j->req_nodes.clear();
    calls.push_back(Call{"defer", id, {}, until, clear, ""});
    return {};
  }
  // As 22.05: only a running job, only to a subset of its nodes.
  Status ShrinkTo(SlurmJobId id, const std::vector<std::string>& n) override {
    SlurmJob* j = job(id);
    if (j == nullptr) return Fail(ErrorCode::kNotFound, "slurm: update job", "Invalid job id specified");
    for (const std::string& x : n) {
      if (j->state != SlurmJobState::kRunning || std::find(j->nodes.begin(), j->nodes.end(), x) == j->nodes.end())
        return Fail(ErrorCode::kInternal, "slurm: update job", "Requested node configuration is not available");
    }
    std::vector<uint32_t> by_node;
    for (size_t k = 0; k < j->nodes.size() && k < j->gpus_by_node.size(); ++k) {
      if (std::find(n.begin(), n.end(), j->nodes[k]) != n.end()) by_node.push_back(j->gpus_by_node[k]);
    }
    j->nodes = n;
    j->gpus_by_node = by_node;
    calls.push_back(Call{"shrink", id, n, 0, false, ""});
    return {};
  }
  Status Requeue(SlurmJobId id) override {
    SlurmJob* j = job(id);
    if (j == nullptr) return Fail(ErrorCode::kNotFound, "slurm: requeue", "Invalid job id specified");
    j->state = SlurmJobState::kPending;
    j->completing = requeue_completing;  // 22.05: pending | completing until the last run is done
    j->nodes.clear();
    ++j->restarts;
    calls.push_back(Call{"requeue", id, {}, 0, false, ""});
    return {};
  }
  Status Signal(SlurmJobId id, int signal, bool) override {
    calls.push_back(Call{"signal", id, {}, signal, false, ""});
    return {};
  }
  Status Cancel(SlurmJobId id) override {
    if (SlurmJob* j = job(id)) j->state = SlurmJobState::kCancelled;
    calls.push_back(Call{"cancel", id, {}, 0, false, ""});
    return {};
  }
  Status SetComment(SlurmJobId id, const std::string& c) override {
    if (SlurmJob* j = job(id)) j->comment = c;
    calls.push_back(Call{"comment", id, {}, 0, false, c});
    return {};
  }
  Result<Duration> CredentialLifetime() override {
    ++conf_loads;
    if (down || cred_expire == 0)
      return Fail(ErrorCode::kInternal, "slurm: slurm_load_ctl_conf", "Unable to contact slurm controller");
    return cred_expire;
  }
};

}  // namespace phalanx::slurm
