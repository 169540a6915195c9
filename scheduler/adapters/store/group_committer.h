// GroupCommitter: many threads write to one Store; one writer thread commits what has queued
// up as ONE transaction (Store::ApplyGroup) and then completes every caller. Throughput comes
// from sharing a commit (and, with SyncMode::kFull, its fsync) among all callers that arrived
// while the previous commit ran; a lone caller is committed at once (no added delay).
//
// Completion: a caller's `done` runs on the writer thread after its batch's transaction
// committed (the batch is durable) or failed. Batches of one group may fail alone (e.g. a
// duplicate job id); the group's commit failing fails all of them. Batches submitted by one
// thread are committed in submission order.
//
// Thread-safety: Enqueue/Write/SubmitJob/Close/stats are safe from any thread. `done` must
// not block on this committer (Write/SubmitJob/Close from a callback deadlocks); Enqueue from
// a callback is fine. While a GroupCommitter lives, it alone uses its Store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "adapters/store/store.h"
#include "util/thread_annotations.h"

namespace phalanx::store {

class GroupCommitter {
 public:
  using Done = std::function<void(Result<BatchResult>)>;

  struct Options {
    size_t max_group = 4096;  // batches per transaction at most
  };

  struct Stats {
    uint64_t groups = 0;   // transactions
    uint64_t batches = 0;  // batches committed or failed
    size_t largest_group = 0;
  };

  // Starts the writer thread. `store` must outlive this object.
  explicit GroupCommitter(Store* store);
  GroupCommitter(Store* store, Options options);
  ~GroupCommitter();  // Close()
  GroupCommitter(const GroupCommitter&) = delete;
  GroupCommitter& operator=(const GroupCommitter&) = delete;

  // Queues `batch`; `done` runs later on the writer thread. After Close(), `done` runs at once
  // (on the calling thread) with an error.
  void Enqueue(Batch batch, Done done) PHALANX_EXCLUDES(mu_);
  // Queues and waits for the commit.
  Result<BatchResult> Write(Batch batch) PHALANX_EXCLUDES(mu_);
  Result<JobId> SubmitJob(JobSpec spec, Time now) PHALANX_EXCLUDES(mu_);

  // Stops accepting work, commits everything queued, joins the writer. Idempotent.
  void Close() PHALANX_EXCLUDES(mu_);

  Stats stats() const PHALANX_EXCLUDES(mu_);

 private:
  struct Pending {
    Batch batch;
    Done done;
  };
  void WriterLoop() PHALANX_EXCLUDES(mu_);

  Store* const store_;  // used by the writer thread only
  const Options options_;
  mutable Mutex mu_;
  CondVar work_{&mu_};
  std::deque<Pending> queue_ PHALANX_GUARDED_BY(mu_);
  bool closing_ PHALANX_GUARDED_BY(mu_) = false;
  Stats stats_ PHALANX_GUARDED_BY(mu_);
  std::once_flag joined_;
  std::thread writer_;  // declared (so started) last; joined once by Close()
};

}  // namespace phalanx::store
