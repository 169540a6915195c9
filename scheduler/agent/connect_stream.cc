#include "agent/connect_stream.h"

#include <cassert>

namespace phalanx::agent {

ConnectStream::ConnectStream(OnCommand on_command, OnDelivered on_delivered)
    : on_command_(std::move(on_command)), on_delivered_(std::move(on_delivered)) {}

std::shared_ptr<ConnectStream> ConnectStream::Open(v1::Agents::Stub* stub, const std::string& token,
                                                   v1::AgentReport first, OnCommand on_command,
                                                   OnDelivered on_delivered) {
  std::shared_ptr<ConnectStream> s(new ConnectStream(std::move(on_command), std::move(on_delivered)));
  if (!token.empty()) s->ctx_.AddMetadata("authorization", "Bearer " + token);
  stub->async()->Connect(&s->ctx_, s.get());
  s->AddHold();
  s->StartRead(&s->in_);
  const v1::AgentReport* hello = nullptr;
  {
    std::lock_guard lock(s->mu_);
    s->out_.emplace_back(std::move(first), 0);
    s->writing_ = true;
    hello = &s->out_.front().first;  // under the lock, as in Send: OnWriteDone pops it
  }
  s->StartWrite(hello);
  s->StartCall();
  return s;
}

bool ConnectStream::Send(v1::AgentReport report, uint64_t token) {
  const v1::AgentReport* start = nullptr;
  {
    std::lock_guard lock(mu_);
    if (closed_) return false;
    out_.emplace_back(std::move(report), token);
    if (!writing_) {
      writing_ = true;
      start = &out_.front().first;  // deque: stays put until OnWriteDone pops it
    }
  }
  if (start != nullptr) StartWrite(start);  // the hold is still ours: writing_ delays its release
  return true;
}

void ConnectStream::OnWriteDone(bool ok) {
  const v1::AgentReport* next = nullptr;
  uint64_t token = 0;
  bool release = false;
  {
    std::lock_guard lock(mu_);
    token = out_.front().second;
    out_.pop_front();
    if (ok && !closed_ && !out_.empty()) {
      next = &out_.front().first;
    } else {
      writing_ = false;
      if (closed_ && !hold_released_) release = hold_released_ = true;
    }
  }
  if (next != nullptr) StartWrite(next);
  if (ok && token != 0 && on_delivered_) on_delivered_(token);
  if (!ok) {
    ctx_.TryCancel();  // a failed write means a broken call: end the read too
    Close();
  }
  if (release) RemoveHold();
}

void ConnectStream::OnReadDone(bool ok) {
  if (!ok) {
    Close();
    return;
  }
  {
    std::lock_guard lock(mu_);
    received_ = true;
  }
  if (on_command_) on_command_(std::move(in_));
  in_.Clear();
  StartRead(&in_);
}

void ConnectStream::Close() {
  bool release = false;
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;
    if (!writing_) release = hold_released_ = true;
  }
  if (release) RemoveHold();
}

void ConnectStream::Cancel() { ctx_.TryCancel(); }

ConnectStream::~ConnectStream() {
  std::lock_guard lock(mu_);
  assert(done_ && "ConnectStream dropped before Wait()");
}

// The last reaction: nothing may touch `this` once the lock is released (the owner's Wait
// returns and may destroy the stream).
void ConnectStream::OnDone(const grpc::Status& status) {
  std::lock_guard lock(mu_);
  done_ = true;
  status_ = status;
  cv_.notify_all();
}

grpc::Status ConnectStream::Wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return done_; });
  return status_;
}

bool ConnectStream::received_any() const {
  std::lock_guard lock(mu_);
  return received_;
}

}  // namespace phalanx::agent
