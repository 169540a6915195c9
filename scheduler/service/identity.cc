#include "service/identity.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <vector>

#include "util/log.h"

namespace phalanx::service {

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  // Only the length may show in the timing.
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

std::string PeerHost(const std::string& peer) {
  if (peer.starts_with("ipv4:")) {
    const std::string rest = peer.substr(5);
    return rest.substr(0, rest.rfind(':'));
  }
  if (peer.starts_with("ipv6:[")) {
    const size_t end = peer.find(']');
    if (end != std::string::npos) return peer.substr(6, end - 6);
  }
  return "";
}

Identity::Names Identity::Resolve(uint32_t uid, uint32_t gid) const {
  constexpr auto kFresh = std::chrono::seconds(60);  // group changes show within a minute
  const auto now = std::chrono::steady_clock::now();
  {
    MutexLock lock(&mu_);
    if (auto it = names_.find({uid, gid}); it != names_.end() && now - it->second.at < kFresh) return it->second;
  }
  Names n;
  n.at = now;
  n.user = "uid:" + std::to_string(uid);
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  std::vector<gid_t> gids = {gid};
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr) {
    n.user = pw.pw_name;
    int count = 64;
    gids.resize(static_cast<size_t>(count));
    if (getgrouplist(pw.pw_name, gid, gids.data(), &count) < 0 && count > 64) {
      gids.resize(static_cast<size_t>(count));
      if (getgrouplist(pw.pw_name, gid, gids.data(), &count) < 0) count = 1;
    }
    gids.resize(static_cast<size_t>(std::max(count, 1)));
    gids[0] = gid;  // getgrouplist puts `gid` first; keep it there even if it failed
  }
  std::vector<char> gbuf(65536);  // a group entry holds its member list
  for (gid_t g : gids) {
    group gr{};
    group* gfound = nullptr;
    std::string name = "gid:" + std::to_string(g);
    if (getgrgid_r(g, &gr, gbuf.data(), gbuf.size(), &gfound) == 0 && gfound != nullptr) name = gr.gr_name;
    if (std::find(n.groups.begin(), n.groups.end(), name) == n.groups.end()) n.groups.push_back(std::move(name));
  }
  MutexLock lock(&mu_);
  if (names_.size() > 10000) names_.clear();
  names_[{uid, gid}] = n;
  return n;
}

grpc::Status Identity::User(const grpc::CallbackServerContext& ctx, Caller* out) const {
  auto cred = peers_ ? peers_->Lookup(ctx.peer()) : std::nullopt;
  const bool over_tcp = !cred && user_auth_ != nullptr && !ctx.peer().starts_with("fd:");
  if (over_tcp) {
    CallAuthenticator::Verdict v = user_auth_->Of(ctx);
    if (!v.status.ok()) return v.status;
    cred = v.cred;
  }
  if (!cred)
    return grpc::Status(
        grpc::StatusCode::UNAUTHENTICATED,
        "the Jobs and Cluster services answer only on phalanxd's Unix socket (peer " + ctx.peer() + ")");
  if (rate_ != nullptr) {
    const double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    if (!rate_->Allow(cred->uid, now)) {
      std::ostringstream why_s;
      why_s << "uid " << cred->uid << " is over its request rate (" << rate_->rate() << "/s, burst " << rate_->burst()
            << ": user_limits.requests_per_second, request_burst)";
      const std::string why = why_s.str();
      log_.Log(LogLevel::kWarn, "rate:" + std::to_string(cred->uid),
               (!over_tcp ? "users' socket: request from uid " + std::to_string(cred->uid) + " pid " +
                                std::to_string(cred->pid)
                          : "users over TCP: request from uid " + std::to_string(cred->uid) + " at " + ctx.peer()) +
                   " refused: " + why);
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "phalanxd: " + why + "; try again later");
    }
  }
  out->uid = cred->uid;
  out->gid = cred->gid;
  out->pid = cred->pid;
  Names names = Resolve(cred->uid, cred->gid);
  out->user = std::move(names.user);
  out->groups = std::move(names.groups);
  out->admin = cred->uid == 0 || admins_.contains(out->user) ||
               std::any_of(out->groups.begin(), out->groups.end(),
                           [&](const std::string& g) { return admin_groups_.contains(g); });
  return grpc::Status::OK;
}

grpc::Status Identity::Agent(const grpc::CallbackServerContext& ctx) const {
  grpc::Status st = AgentCheck(ctx);
  if (!st.ok()) {
    // Someone without the token knocking on the agents' port (or a misconfigured agent): a
    // trace with the address, without letting a flood fill the log.
    const std::string peer = ctx.peer();
    const std::string host = PeerHost(peer);
    log_.Log(LogLevel::kWarn, "agent:" + (host.empty() ? peer : host) + ":" + st.error_message(),
             "agents: call from " + peer + " refused: " + st.error_message());
  }
  return st;
}

grpc::Status Identity::AgentCheck(const grpc::CallbackServerContext& ctx) const {
  if (peers_) {
    if (auto cred = peers_->Lookup(ctx.peer())) {
      if (cred->uid == 0) return grpc::Status::OK;
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "agents on the Unix socket must run as root");
    }
  }
  if (token_.empty()) return grpc::Status::OK;  // TLS client certificates authenticated the connection
  const auto& md = ctx.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing 'authorization: Bearer <token>'");
  const std::string_view value(it->second.data(), it->second.size());
  constexpr std::string_view kBearer = "Bearer ";
  if (!value.starts_with(kBearer) || !ConstantTimeEquals(value.substr(kBearer.size()), token_))
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "invalid agent token");
  return grpc::Status::OK;
}

}  // namespace phalanx::service
