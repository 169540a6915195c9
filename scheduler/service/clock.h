// Clock: where phalanxd's time comes from. The core takes time as an argument (Unix seconds);
// the daemon reads it here, so tests can substitute a clock they move by hand (LevelDB's Env
// idea, for the clock only). Timers that only bound waiting (grace periods, heartbeats) use
// Asio's steady clock, not this.
// Thread-safety: implementations are safe from any thread.
#pragma once

#include <atomic>
#include <chrono>

#include "core/common/time.h"

namespace phalanx::service {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Time Now() const = 0;  // Unix seconds
};

// The system clock.
class SystemClock final : public Clock {
 public:
  Time Now() const override {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

// A clock tests set and advance.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Time start) : now_(start) {}
  Time Now() const override { return now_.load(); }
  void Set(Time t) { now_.store(t); }
  void Advance(Time seconds) { now_.fetch_add(seconds); }

 private:
  std::atomic<Time> now_;
};

}  // namespace phalanx::service
