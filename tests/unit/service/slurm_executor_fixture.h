// The fixture of the SlurmExecutor tests (slurm_executor_test.cc, slurm_executor_partitions_test.cc):
// a fake Slurm (fake_slurm_adapter.h), a fake host that owns a real core, and a two-leaf topology.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <future>
#include <thread>

#include "adapters/topology/topology_reader_slurm.h"
#include "core/sched/config.h"
#include "fake_slurm_adapter.h"
#include "service/slurm_executor.h"

namespace phalanx::service::slurm_test {

using slurm::FakeSlurm;
using slurm::SlurmJob;
using slurm::SlurmJobState;
using slurm::SlurmWait;

inline Topology TwoLeaves() {
  auto spec = ReadSlurmTopology(
      "SwitchName=leaf1 Nodes=n[1-2]\nSwitchName=leaf2 Nodes=n[3-4]\nSwitchName=spine Switches=leaf[1-2]\n",
      "topology.conf", SlurmReadOptions{});
  EXPECT_TRUE(spec);
  return std::move(*Topology::Build(*spec));
}

// The Controller's part, on a real core: submissions, passes, what the executor reports.
class Host final : public ExecutorHost {
 public:
  Host() {
    auto config = PolicyPreset("phalanx");
    EXPECT_TRUE(config);
    config->wait_decisions = false;
    auto core = Scheduler::Create(TwoLeaves(), *config);
    EXPECT_TRUE(core) << core.error().ToString();
    core_ = std::move(*core);
  }
  const Scheduler& core() const override { return *core_; }
  Scheduler& mutable_core() { return *core_; }
  const LaunchInfo* launch_info(JobId job) const override {
    auto it = launch_.find(job);
    return it == launch_.end() ? nullptr : &it->second;
  }
  CallStatus Serving() const override { return {}; }
  Time Now() override { return now; }
  void AfterStored(std::function<void()> then) override { then(); }  // nothing is written here
  void JobPartsEnded(JobId job, bool success, int32_t, const std::string& reason) override {
    ended.push_back(std::to_string(job) + (success ? " ok " : " failed ") + reason);
    EXPECT_TRUE(core_->JobEnded(job, now, success));
  }
  void JobLost(JobId job, const std::string& reason) override {
    ended.push_back(std::to_string(job) + " lost " + reason);
    EXPECT_TRUE(core_->JobLost(job, now, reason));
  }
  void CheckpointReported(JobId, uint64_t, const std::string&, const std::string&) override {}
  void NodeAvailabilityChanged(const std::string& node, const std::string& why) override {
    const NodeAvailability a = executor->node(node).availability;
    const NodeState s = a == NodeAvailability::kAvailable     ? NodeState::kUp
                        : a == NodeAvailability::kUnconfirmed ? NodeState::kDrain
                                                              : NodeState::kDown;
    if (core_->topology().node_state(core_->topology().find_node(node)) == s) return;
    EXPECT_TRUE(core_->SetNodeState(node, s, now));
    node_changes.push_back(node + ": " + why);
  }
  uint32_t SetExternalLoad(const std::string& node, const std::vector<Scheduler::ExternalPiece>& pieces) override {
    auto taken = core_->SetExternalLoad(node, pieces, now);
    EXPECT_TRUE(taken) << taken.error().ToString();
    uint32_t gpus = 0;
    Time until = 0;
    for (const auto& p : pieces) {
      gpus += p.gpus;
      until = std::max(until, p.until);
    }
    loads.push_back(node + ":" + std::to_string(gpus) + "@" + std::to_string(until));
    return taken ? *taken : 0;
  }
  Status SetPartitions(std::vector<PartitionConfig> partitions) override {
    ++partition_updates;
    return core_->SetPartitions(std::move(partitions), now);
  }

  void Submit(JobSpec spec, LaunchInfo launch, Reply<JobId> done) {
    spec.id = next_id_++;
    spec.submit = now;
    if (auto st = core_->Submit(spec, now); !st) return done(std::unexpected(st.error()));
    launch_[spec.id] = std::move(launch);
    ++submits;
    done(spec.id);
  }
  // The Controller's Update as root (the Slurm mode moves a pending job's partitions).
  void Update(JobId job, const Scheduler::JobUpdate& u, Reply<void> done) {
    ++updates;
    if (auto st = core_->Update(job, u, now); !st) return done(std::unexpected(CallError{st.error()}));
    done({});
  }
  // A pass; Start decisions go to the executor as the Controller hands them over.
  void Pass() {
    for (const Decision& d : core_->Schedule(now)) {
      if (d.kind == DecisionKind::kStart) executor->StartJob(d.job, d.gpus, 1);
      if (d.kind == DecisionKind::kPreempt || d.kind == DecisionKind::kKill) executor->StopJob(d.job, d.reason);
      if (d.kind == DecisionKind::kCheckpoint) executor->SignalJob(d.job, 10, d.deadline);
      if (d.kind == DecisionKind::kResize) executor->RestartJob(d.job, d.gpus, 2);
    }
  }

  Time now = 1000;
  Executor* executor = nullptr;
  int submits = 0;
  int partition_updates = 0;
  int updates = 0;  // Update calls (job partitions moved)
  std::vector<std::string> ended, node_changes, loads;

 private:
  std::unique_ptr<Scheduler> core_;
  std::map<JobId, LaunchInfo> launch_;
  JobId next_id_ = 1;
};

class SlurmExecutorTest : public ::testing::Test {
 protected:
  SlurmExecutorTest() {
    for (const char* n : {"n1", "n2", "n3", "n4"}) slurm_.nodes.push_back(slurm::SlurmNode{n, false, false, 8, ""});
    MakeExecutor();
  }
  void MakeExecutor() {
    SlurmModeOptions o;
    o.fallback_delay_s = 30;
    o.start_timeout_s = 20;
    exec_ = std::make_unique<SlurmExecutor>(io_, &slurm_, host_.core().topology(), o);
    exec_->Attach(&host_);
    exec_->SetController([this](JobSpec s, LaunchInfo l, Reply<JobId> d) { host_.Submit(s, l, d); },
                         [this](JobId job, const std::string&) { (void)host_.mutable_core().Cancel(job, host_.now); },
                         [this](JobId job, Scheduler::JobUpdate u, Reply<void> d) { host_.Update(job, u, d); });
    host_.executor = exec_.get();
  }
  // Phalanx's job: -N2 --gres=gpu:8 --phx-topology=leaf (spine for more nodes), pending behind
  // job_submit.lua's delay.
  SlurmJob& Managed(slurm::SlurmJobId id, uint32_t nodes = 2) {
    SlurmJob j;
    j.id = id;
    j.uid = 0;
    j.name = "train";
    j.admin_comment = nodes <= 2 ? "phalanx:topology=leaf" : "phalanx:topology=spine";  // a leaf has 2 nodes
    j.num_nodes = nodes;
    j.gpus_per_node = 8;
    j.time_limit = 600;
    j.wait = SlurmWait::kBeginTime;
    j.reason = "BeginTime";
    j.priority = 1000;
    slurm_.jobs.push_back(j);
    return slurm_.jobs.back();
  }
  SlurmJob& Unmanaged(slurm::SlurmJobId id, const std::string& node, Time end) {
    SlurmJob j;
    j.id = id;
    j.state = SlurmJobState::kRunning;
    j.num_nodes = 1;
    j.gpus_per_node = 8;
    j.nodes = {node};
    j.end = end;
    slurm_.jobs.push_back(j);
    return slurm_.jobs.back();
  }
  // Runs the io loop until every call to Slurm has been answered there (they run on the
  // executor's worker thread).
  void Drain() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (true) {
      io_.restart();
      const size_t ran = io_.poll();
      if (exec_->in_flight() == 0 && ran == 0) break;
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "Slurm calls still in flight";
      if (exec_->in_flight() > 0) {
        io_.restart();
        io_.run_one_for(std::chrono::milliseconds(10));
      }
    }
    io_.restart();
  }
  void Poll() {
    exec_->Poll();
    Drain();
  }
  void Round() {
    Poll();
    host_.Pass();
    Drain();
  }

  boost::asio::io_context io_;
  FakeSlurm slurm_;
  Host host_;
  std::unique_ptr<SlurmExecutor> exec_;
};

}  // namespace phalanx::service::slurm_test
