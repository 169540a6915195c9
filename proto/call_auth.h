// Call credentials of users over TCP (docs/daemon.md, "Users over TCP"): each call carries a
// MUNGE credential in the gRPC metadata `x-phalanx-munge`, made by the caller's munged, whose
// payload binds it to that one call:
//   "phalanx-call-v1\n" METHOD "\n" SHA-256 hex of the request's deterministic serialization
// (METHOD as gRPC names it, "/phalanx.v1.Jobs/Submit"). phalanxd decodes the credential through
// its own munged (same key), which gives the uid and gid and refuses a forged (another key,
// corrupt), expired (past its TTL), rewound (encoded "in the future") or replayed (decoded
// before) credential; phalanxd then checks the payload against the call it came with, so a
// credential seen on the wire cannot be put on another request.
//
// Build: over libmunge where libmunge-dev was found at configure time
// (PHALANX_HAVE_MUNGE); elsewhere MungeEncode/MungeDecode fail with kUnsupported.
// Thread-safety: pure functions, except MungeEncode/MungeDecode (a round trip to munged's
// socket; safe from any thread).
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

namespace google::protobuf {
class MessageLite;
}

namespace phalanx::auth {

inline constexpr char kMungeMetadata[] = "x-phalanx-munge";

// The lowercase hex SHA-256 of `bytes`.
std::string Sha256Hex(std::string_view bytes);

// The payload a credential for this call carries (see above).
std::string CallPayload(std::string_view method, const google::protobuf::MessageLite& request);

// True when built with libmunge.
bool HaveMunge();

enum class MungeFailure {
  kUnsupported,  // built without libmunge
  kUnavailable,  // munged did not answer (not running, wrong socket, timeout)
  kInvalid,      // forged or damaged: another key, a bad MAC, not a credential
  kExpired,      // older than its time-to-live
  kRewound,      // encoded in the future (clocks apart)
  kReplayed,     // decoded before
  kOther,
};
std::string_view MungeFailureName(MungeFailure f);  // "invalid", "expired", ...

struct MungeError {
  MungeFailure kind = MungeFailure::kOther;
  std::string message;  // libmunge's words, with the socket for kUnavailable
};

struct MungeIdentity {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::string payload;
};

// A credential for the calling process (munged reads its uid and gid from the socket) holding
// `payload`. `socket`: munged's socket, empty for libmunge's default; `ttl_s` 0: munged's default.
std::expected<std::string, MungeError> MungeEncode(const std::string& socket, std::string_view payload, int ttl_s = 0);
// Decodes `credential` through munged at `socket` (empty: the default).
std::expected<MungeIdentity, MungeError> MungeDecode(const std::string& socket, const std::string& credential);

}  // namespace phalanx::auth
