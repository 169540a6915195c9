// OutStream<Msg>: the sending half of a gRPC server-streaming or bidi reactor, usable from any
// thread (the daemon's io thread sends agent commands and watch events through it).
//
// gRPC allows one outstanding write per stream and no write after Finish; OutStream queues
// messages, keeps one write in flight, and finishes the stream only when no write is in flight
// (so Finish never races a StartWrite). A queue longer than `max_queue` closes the stream with
// RESOURCE_EXHAUSTED (a reader too slow to keep up). After Close, or once the reactor is done,
// Send returns false. The reactor forwards OnWriteDone and calls Detach from OnDone, before it
// deletes itself; holders keep the OutStream alive through shared_ptr.
//
// Thread-safety: every method is safe from any thread. The start/finish callbacks are never
// called with the mutex held.
#pragma once

#include <deque>
#include <functional>
#include <utility>

#include <grpcpp/support/status.h>

#include "util/thread_annotations.h"

namespace phalanx::service {

template <typename Msg>
class OutStream {
 public:
  struct Ops {
    std::function<void(const Msg*)> start_write;  // the reactor's StartWrite
    std::function<void(grpc::Status)> finish;     // the reactor's Finish
  };

  OutStream(Ops ops, size_t max_queue) : ops_(std::move(ops)), max_queue_(max_queue) {}

  // Queues `msg`. False when the stream is closing, closed, or just overflowed.
  bool Send(Msg msg) PHALANX_EXCLUDES(mu_) {
    enum { kNone, kWrite, kFinish } action = kNone;
    bool queued = false;
    {
      MutexLock lock(&mu_);
      if (closing_ || detached_) return false;
      if (queue_.size() >= max_queue_) {
        queue_.clear();
        closing_ = true;
        status_ = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "the reader does not keep up with the stream");
        if (!writing_) {
          finished_ = true;
          action = kFinish;
        }
      } else {
        queue_.push_back(std::move(msg));
        queued = true;
        if (!writing_) {
          writing_ = true;
          current_ = std::move(queue_.front());
          queue_.pop_front();
          action = kWrite;
        }
      }
    }
    if (action == kFinish) ops_.finish(status_copy());
    if (action == kWrite) ops_.start_write(&current_);
    return queued;
  }

  // Finishes the stream with `status` once the write in flight (if any) is done; queued
  // messages are dropped. Idempotent.
  void Close(grpc::Status status) PHALANX_EXCLUDES(mu_) {
    {
      MutexLock lock(&mu_);
      if (closing_ || detached_) return;
      closing_ = true;
      status_ = std::move(status);
      queue_.clear();
      if (writing_) return;
      finished_ = true;
    }
    ops_.finish(status_copy());
  }

  // The reactor's OnWriteDone.
  void OnWriteDone(bool ok) PHALANX_EXCLUDES(mu_) {
    bool finish = false;
    {
      MutexLock lock(&mu_);
      writing_ = false;
      if (!ok && !closing_) {
        closing_ = true;
        status_ = grpc::Status(grpc::StatusCode::CANCELLED, "stream broken");
        queue_.clear();
      }
      if (closing_) {
        if (finished_ || detached_) return;
        finished_ = true;
        finish = true;
      } else if (!queue_.empty()) {
        writing_ = true;
        current_ = std::move(queue_.front());
        queue_.pop_front();
      } else {
        return;
      }
    }
    if (finish) ops_.finish(status_copy());
    else ops_.start_write(&current_);
  }

  // The reactor's OnDone: no callback runs after this.
  void Detach() PHALANX_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    detached_ = true;
    closing_ = true;
    queue_.clear();
  }

  bool closed() const PHALANX_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return closing_ || detached_;
  }

 private:
  // status_ never changes once closing_ is set.
  grpc::Status status_copy() PHALANX_EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return status_;
  }

  const Ops ops_;
  const size_t max_queue_;
  mutable Mutex mu_;
  std::deque<Msg> queue_ PHALANX_GUARDED_BY(mu_);
  Msg current_;  // the message in flight; touched only by the thread holding the write token
  bool writing_ PHALANX_GUARDED_BY(mu_) = false;
  bool closing_ PHALANX_GUARDED_BY(mu_) = false;
  bool finished_ PHALANX_GUARDED_BY(mu_) = false;
  bool detached_ PHALANX_GUARDED_BY(mu_) = false;
  grpc::Status status_ PHALANX_GUARDED_BY(mu_);
};

}  // namespace phalanx::service
