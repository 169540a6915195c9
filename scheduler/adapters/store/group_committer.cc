#include "adapters/store/group_committer.h"

#include <algorithm>
#include <future>
#include <utility>
#include <vector>

namespace phalanx::store {

GroupCommitter::GroupCommitter(Store* store) : GroupCommitter(store, Options{}) {}

GroupCommitter::GroupCommitter(Store* store, Options options)
    : store_(store), options_(options), writer_([this] { WriterLoop(); }) {}

GroupCommitter::~GroupCommitter() { Close(); }

void GroupCommitter::Enqueue(Batch batch, Done done) {
  {
    MutexLock lock(&mu_);
    if (!closing_) {
      queue_.push_back(Pending{std::move(batch), std::move(done)});
      work_.Signal();
      return;
    }
  }
  done(Fail(store_->path(), "the group committer is closed"));
}

Result<BatchResult> GroupCommitter::Write(Batch batch) {
  std::promise<Result<BatchResult>> promise;
  std::future<Result<BatchResult>> future = promise.get_future();
  Enqueue(std::move(batch), [&promise](Result<BatchResult> r) { promise.set_value(std::move(r)); });
  return future.get();
}

Result<JobId> GroupCommitter::SubmitJob(JobSpec spec, Time now) {
  Batch b;
  b.SubmitJob(std::move(spec), now);
  PHX_ASSIGN_OR_RETURN(auto r, Write(std::move(b)));
  return r.submitted.at(0);
}

void GroupCommitter::Close() {
  {
    MutexLock lock(&mu_);
    closing_ = true;
    work_.SignalAll();
  }
  std::call_once(joined_, [this] { writer_.join(); });
}

GroupCommitter::Stats GroupCommitter::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

void GroupCommitter::WriterLoop() {
  std::vector<Pending> group;
  std::vector<const Batch*> batches;
  while (true) {
    group.clear();
    {
      MutexLock lock(&mu_);
      while (queue_.empty() && !closing_) work_.Wait();
      if (queue_.empty()) return;  // closing, and everything queued is committed
      const size_t n = std::min(queue_.size(), options_.max_group);
      for (size_t i = 0; i < n; ++i) {
        group.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    batches.clear();
    for (const Pending& p : group) batches.push_back(&p.batch);
    std::vector<Result<BatchResult>> results = store_->ApplyGroup(batches);
    {
      MutexLock lock(&mu_);
      ++stats_.groups;
      stats_.batches += group.size();
      stats_.largest_group = std::max(stats_.largest_group, group.size());
    }
    for (size_t i = 0; i < group.size(); ++i) group[i].done(std::move(results[i]));
  }
}

}  // namespace phalanx::store
