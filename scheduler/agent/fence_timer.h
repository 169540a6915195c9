// FenceTimer: when an agent cut off from phalanxd must stop its job parts (docs/agent.md "When
// the agent is cut off"). The daemon gives the limit at registration (RegisterResponse
// fence_after_s, 0: no fencing); every message from the daemon is a contact. Once `limit` has
// passed since the last contact the fence is due, once: Fence() marks it done until the next
// contact. Pure: the caller passes the time (a steady clock in the agent, made-up points in
// tests).
// Thread-safety: none (the agent's io thread).
#pragma once

#include <chrono>

namespace phalanx::agent {

class FenceTimer {
 public:
  using Clock = std::chrono::steady_clock;

  // A new limit (0: off) from a registration; counts as a contact at `now`.
  void SetLimit(std::chrono::milliseconds limit, Clock::time_point now);
  // The daemon sent something.
  void Contact(Clock::time_point now);
  // The limit is set, has passed since the last contact, and Fence was not called since.
  bool Due(Clock::time_point now) const;
  // The parts are being stopped; Due stays false until the next contact.
  void Fence() { fenced_ = true; }

  bool fenced() const { return fenced_; }
  std::chrono::milliseconds limit() const { return limit_; }
  // How long to wait before Due could become true (the limit when off or fenced: a poll period).
  std::chrono::milliseconds UntilDue(Clock::time_point now) const;

 private:
  std::chrono::milliseconds limit_{0};
  Clock::time_point last_contact_{};
  bool fenced_ = false;
};

}  // namespace phalanx::agent
