#include "call_auth.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/message_lite.h>
#include <openssl/evp.h>

#include <cstdlib>
#include <memory>

#ifdef PHALANX_HAVE_MUNGE
#include <munge.h>
#endif

namespace phalanx::auth {

std::string Sha256Hex(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr) != 1) return {};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 0xf]);
  }
  return out;
}

std::string CallPayload(std::string_view method, const google::protobuf::MessageLite& request) {
  // Deterministic: map fields (JobSpec.env) in key order, so both sides hash the same bytes.
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream sos(&bytes);
    google::protobuf::io::CodedOutputStream cos(&sos);
    cos.SetSerializationDeterministic(true);
    (void)request.SerializeToCodedStream(&cos);
  }
  std::string out = "phalanx-call-v1\n";
  out.append(method);
  out += "\n";
  out += Sha256Hex(bytes);
  return out;
}

std::string_view MungeFailureName(MungeFailure f) {
  switch (f) {
    case MungeFailure::kUnsupported: return "unsupported";
    case MungeFailure::kUnavailable: return "unavailable";
    case MungeFailure::kInvalid: return "invalid";
    case MungeFailure::kExpired: return "expired";
    case MungeFailure::kRewound: return "rewound";
    case MungeFailure::kReplayed: return "replayed";
    case MungeFailure::kOther: break;
  }
  return "other";
}

#ifdef PHALANX_HAVE_MUNGE

namespace {

struct CtxDeleter {
  void operator()(munge_ctx_t c) const { munge_ctx_destroy(c); }
};
using Ctx = std::unique_ptr<std::remove_pointer_t<munge_ctx_t>, CtxDeleter>;

MungeFailure Classify(munge_err_t e) {
  switch (e) {
    case EMUNGE_SOCKET:
    case EMUNGE_TIMEOUT: return MungeFailure::kUnavailable;
    case EMUNGE_BAD_CRED:
    case EMUNGE_BAD_VERSION:
    case EMUNGE_BAD_CIPHER:
    case EMUNGE_BAD_MAC:
    case EMUNGE_BAD_ZIP:
    case EMUNGE_BAD_REALM:
    case EMUNGE_CRED_INVALID:
    case EMUNGE_CRED_UNAUTHORIZED: return MungeFailure::kInvalid;
    case EMUNGE_CRED_EXPIRED: return MungeFailure::kExpired;
    case EMUNGE_CRED_REWOUND: return MungeFailure::kRewound;
    case EMUNGE_CRED_REPLAYED: return MungeFailure::kReplayed;
    default: return MungeFailure::kOther;
  }
}

std::expected<Ctx, MungeError> MakeCtx(const std::string& socket) {
  Ctx ctx(munge_ctx_create());
  if (!ctx) return std::unexpected(MungeError{MungeFailure::kOther, "munge_ctx_create failed (out of memory)"});
  if (!socket.empty() && munge_ctx_set(ctx.get(), MUNGE_OPT_SOCKET, socket.c_str()) != EMUNGE_SUCCESS)
    return std::unexpected(MungeError{MungeFailure::kOther, "cannot set the munge socket '" + socket + "'"});
  return ctx;
}

MungeError ErrorOf(munge_err_t e, munge_ctx_t ctx, const std::string& socket) {
  const char* why = munge_ctx_strerror(ctx);
  MungeError err{Classify(e), why != nullptr ? why : munge_strerror(e)};
  // libmunge names the socket it tried ("Failed to access \"/run/munge/munge.socket.2\": ...").
  if (err.kind == MungeFailure::kUnavailable && err.message.find("munged") == std::string::npos)
    err.message +=
        " (munged's socket: " + (socket.empty() ? std::string("libmunge's default") : socket) + "; is munged running?)";
  return err;
}

}  // namespace

bool HaveMunge() { return true; }

std::expected<std::string, MungeError> MungeEncode(const std::string& socket, std::string_view payload, int ttl_s) {
  auto ctx = MakeCtx(socket);
  if (!ctx) return std::unexpected(ctx.error());
  if (ttl_s > 0 && munge_ctx_set(ctx->get(), MUNGE_OPT_TTL, ttl_s) != EMUNGE_SUCCESS)
    return std::unexpected(MungeError{MungeFailure::kOther, "cannot set the credential's time-to-live"});
  char* cred = nullptr;
  const munge_err_t e = munge_encode(&cred, ctx->get(), payload.data(), static_cast<int>(payload.size()));
  if (e != EMUNGE_SUCCESS) {
    std::free(cred);
    return std::unexpected(ErrorOf(e, ctx->get(), socket));
  }
  std::string out(cred);
  std::free(cred);
  return out;
}

std::expected<MungeIdentity, MungeError> MungeDecode(const std::string& socket, const std::string& credential) {
  auto ctx = MakeCtx(socket);
  if (!ctx) return std::unexpected(ctx.error());
  void* buf = nullptr;
  int len = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  const munge_err_t e = munge_decode(credential.c_str(), ctx->get(), &buf, &len, &uid, &gid);
  std::string payload = buf != nullptr && len > 0 ? std::string(static_cast<const char*>(buf), len) : std::string();
  std::free(buf);
  if (e != EMUNGE_SUCCESS) return std::unexpected(ErrorOf(e, ctx->get(), socket));
  return MungeIdentity{uid, gid, std::move(payload)};
}

#else  // !PHALANX_HAVE_MUNGE

namespace {
MungeError Unsupported() {
  return MungeError{MungeFailure::kUnsupported, "built without libmunge (install libmunge-dev and rebuild)"};
}
}  // namespace

bool HaveMunge() { return false; }

std::expected<std::string, MungeError> MungeEncode(const std::string&, std::string_view, int) {
  return std::unexpected(Unsupported());
}

std::expected<MungeIdentity, MungeError> MungeDecode(const std::string&, const std::string&) {
  return std::unexpected(Unsupported());
}

#endif

}  // namespace phalanx::auth
