#include "service/call_authenticator.h"

#include <google/protobuf/message_lite.h>
#include <grpcpp/support/interceptor.h>

#include <utility>

#include "call_auth.h"
#include "service/identity.h"
#include "util/log.h"

namespace phalanx::service {
namespace {

using grpc::experimental::InterceptionHookPoints;

// Methods whose requests are phalanx.v1 protobuf messages (the services the TCP server serves).
bool Authenticated(std::string_view method) {
  return method.starts_with("/phalanx.v1.Jobs/") || method.starts_with("/phalanx.v1.Cluster/");
}

class AuthInterceptor final : public grpc::experimental::Interceptor {
 public:
  AuthInterceptor(CallAuthenticator* auth, grpc::experimental::ServerRpcInfo* info)
      : auth_(auth), info_(info), generation_(auth->NextGeneration()) {}
  ~AuthInterceptor() override { auth_->Forget(info_->server_context(), generation_); }

  void Intercept(grpc::experimental::InterceptorBatchMethods* m) override {
    const std::string_view method = info_->method() != nullptr ? info_->method() : "";
    if (Authenticated(method)) {
      if (m->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
        const auto* md = m->GetRecvInitialMetadata();
        auto [begin, end] = md->equal_range(auth::kMungeMetadata);
        for (auto it = begin; it != end; ++it) {
          if (++credentials_ == 1) credential_.assign(it->second.data(), it->second.size());
        }
        // Until the request is seen (a call without one is never served).
        auth_->Record(info_->server_context(), generation_,
                      {grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "phalanxd: no request to authenticate"), {}});
      }
      if (m->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE)) {
        // The handler of a phalanx.v1 method deserialized a generated message (a MessageLite).
        const auto* request = static_cast<const google::protobuf::MessageLite*>(m->GetRecvMessage());
        auth_->Record(info_->server_context(), generation_,
                      auth_->Verify(info_->server_context()->peer(), method, credentials_ > 0 ? &credential_ : nullptr,
                                    credentials_, request));
      }
    }
    m->Proceed();
  }

 private:
  CallAuthenticator* const auth_;
  grpc::experimental::ServerRpcInfo* const info_;
  const uint64_t generation_;
  std::string credential_;
  int credentials_ = 0;
};

class AuthFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit AuthFactory(CallAuthenticator* auth) : auth_(auth) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    return new AuthInterceptor(auth_, info);
  }

 private:
  CallAuthenticator* const auth_;
};

grpc::Status Unauthenticated(std::string message) {
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "phalanxd: " + std::move(message));
}

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> CallAuthenticator::MakeFactory() {
  return std::make_unique<AuthFactory>(this);
}

void CallAuthenticator::Record(const grpc::ServerContextBase* ctx, uint64_t generation, Verdict verdict) {
  MutexLock lock(&mu_);
  verdicts_[ctx] = Entry{generation, std::move(verdict)};
}

void CallAuthenticator::Forget(const grpc::ServerContextBase* ctx, uint64_t generation) {
  MutexLock lock(&mu_);
  auto it = verdicts_.find(ctx);
  if (it != verdicts_.end() && it->second.generation == generation) verdicts_.erase(it);
}

CallAuthenticator::Verdict CallAuthenticator::Of(const grpc::ServerContextBase& ctx) const {
  MutexLock lock(&mu_);
  auto it = verdicts_.find(&ctx);
  if (it == verdicts_.end()) return {Unauthenticated("the call carries no MUNGE credential"), {}};
  return it->second.verdict;
}

CallAuthenticator::Verdict CallAuthenticator::Refuse(const std::string& peer, std::string_view reason,
                                                     grpc::Status status) {
  ++refused_;
  const std::string host = PeerHost(peer);
  log_.Log(LogLevel::kWarn, "munge:" + (host.empty() ? peer : host) + ":" + std::string(reason),
           "users over TCP: call from " + peer + " refused: " + status.error_message());
  return {std::move(status), {}};
}

CallAuthenticator::Verdict CallAuthenticator::Verify(const std::string& peer, std::string_view method,
                                                     const std::string* credential, int credentials,
                                                     const google::protobuf::MessageLite* request) {
  log_.FlushToLog();
  if (credential == nullptr)
    return Refuse(
        peer, "missing",
        Unauthenticated("the call carries no MUNGE credential (metadata '" + std::string(auth::kMungeMetadata) +
                        "'; the Phalanx commands add one when munged runs)"));
  if (credentials > 1) return Refuse(peer, "several", Unauthenticated("the call carries more than one credential"));
  if (request == nullptr) return Refuse(peer, "norequest", Unauthenticated("no request to authenticate"));
  auto decoded = auth::MungeDecode(socket_, *credential);
  if (!decoded) {
    const auto& e = decoded.error();
    if (e.kind == auth::MungeFailure::kUnavailable) {
      ++refused_;
      log_.Log(LogLevel::kError, "munge:unavailable", "users over TCP: cannot check credentials: " + e.message);
      return {grpc::Status(grpc::StatusCode::UNAVAILABLE, "phalanxd cannot check MUNGE credentials: " + e.message), {}};
    }
    std::string what;
    switch (e.kind) {
      case auth::MungeFailure::kInvalid: what = "invalid MUNGE credential (forged, damaged, or another key)"; break;
      case auth::MungeFailure::kExpired: what = "expired MUNGE credential"; break;
      case auth::MungeFailure::kRewound: what = "MUNGE credential from the future (clocks apart)"; break;
      case auth::MungeFailure::kReplayed: what = "replayed MUNGE credential"; break;
      default: what = "MUNGE credential refused"; break;
    }
    return Refuse(peer, auth::MungeFailureName(e.kind), Unauthenticated(what + ": " + e.message));
  }
  if (decoded->payload != auth::CallPayload(method, *request))
    return Refuse(peer, "binding",
                  Unauthenticated("the MUNGE credential (uid " + std::to_string(decoded->uid) +
                                  ") was made for another call, not this " + std::string(method) + " request"));
  ++accepted_;
  return {grpc::Status::OK, PeerCred{decoded->uid, decoded->gid, 0}};
}

grpc::Status CallAuthenticator::SelfCheck() const {
  auto cred = auth::MungeEncode(socket_, "phalanx-self-check");
  if (!cred) return grpc::Status(grpc::StatusCode::UNAVAILABLE, cred.error().message);
  auto back = auth::MungeDecode(socket_, *cred);
  if (!back) return grpc::Status(grpc::StatusCode::UNAVAILABLE, back.error().message);
  return grpc::Status::OK;
}

}  // namespace phalanx::service
