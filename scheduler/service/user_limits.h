// UserLimits: what one local user may take of phalanxd through the users' Unix socket, so that a
// user who floods it (thousands of idle connections, a request loop) is refused while everyone
// else is served (issue 12.1). Configured in phalanxd's YAML under `user_limits:` (docs/daemon.md).
//  - connections: at most max_connections_per_uid open at once per uid, max_connections for all
//    users together (a connection over either limit is closed at accept, before gRPC sees it);
//  - requests: a token bucket per uid (requests_per_second refill, request_burst capacity); a call
//    without a token is answered RESOURCE_EXHAUSTED naming the limit;
//  - idle: a connection without a call for idle_timeout_s is closed.
// Uids in exempt_uids (root by default: local agents, the admin's tools) are never refused nor
// idle-closed; their connections still count towards max_connections. 0 turns a limit off.
//
// UidRateLimiter is the token buckets; time is passed in (any monotonic seconds) so it is
// deterministic under test.
// Thread-safety: UserLimits is a plain value; UidRateLimiter is safe from any thread.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>

#include "util/thread_annotations.h"

namespace phalanx::service {

struct UserLimits {
  uint32_t max_connections = 4096;        // all users together (also capped by RLIMIT_NOFILE)
  uint32_t max_connections_per_uid = 64;  // open at once, per uid
  double requests_per_second = 50;        // per uid, sustained
  uint32_t request_burst = 200;           // per uid, at once after a quiet spell
  double idle_timeout_s = 300;            // no call for this long: the connection is closed
  std::set<uint32_t> exempt_uids = {0};

  bool Exempt(uint32_t uid) const { return exempt_uids.contains(uid); }
};

// One bucket: `burst` tokens, refilled at `rate` per second; Take() spends one if there is one.
class TokenBucket {
 public:
  TokenBucket(double rate, double burst, double now_s) : rate_(rate), burst_(burst), tokens_(burst), last_(now_s) {}
  bool Take(double now_s);
  bool Full(double now_s) const;

 private:
  double rate_, burst_, tokens_, last_;
};

class UidRateLimiter {
 public:
  // rate <= 0 or burst == 0: no limit.
  UidRateLimiter(double rate, uint32_t burst, std::set<uint32_t> exempt)
      : rate_(rate), burst_(burst), exempt_(std::move(exempt)) {}

  bool enabled() const { return rate_ > 0 && burst_ > 0; }
  double rate() const { return rate_; }
  uint32_t burst() const { return burst_; }
  // True when `uid` may make one more request at `now_s` (and spends its token).
  bool Allow(uint32_t uid, double now_s) PHALANX_EXCLUDES(mu_);
  uint64_t refused() const PHALANX_EXCLUDES(mu_);

 private:
  const double rate_;
  const uint32_t burst_;
  const std::set<uint32_t> exempt_;
  mutable Mutex mu_;
  std::unordered_map<uint32_t, TokenBucket> buckets_ PHALANX_GUARDED_BY(mu_);
  uint64_t refused_ PHALANX_GUARDED_BY(mu_) = 0;
};

}  // namespace phalanx::service
