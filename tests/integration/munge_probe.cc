// munge_probe: raw calls to phalanxd's TCP listener for users with hand-made MUNGE credentials,
// for users_tcp_munge_test.sh. One line per call: "<case> <CODE>[ <message>]".
//   munge_probe TARGET MUNGE_SOCKET OTHER_MUNGE_SOCKET CASE...
// Cases: none (no credential), good (a valid one), forged (made by the munged at
// OTHER_MUNGE_SOCKET, another key), replay (the same credential twice: "replay1", "replay2"),
// expired (a 1 s time-to-live, sent 2.2 s later), other_request (made for List{limit: 1}, sent
// with List{}), other_method (made for Get, sent with List), twice (two credentials),
// flood:N (N calls without a credential; one line with the count of UNAUTHENTICATED).
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "call_auth.h"
#include "phalanx/v1/phalanx.grpc.pb.h"

namespace v1 = phalanx::v1;
namespace auth = phalanx::auth;

namespace {

constexpr char kList[] = "/phalanx.v1.Jobs/List";

const char* CodeName(grpc::StatusCode c) {
  switch (c) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    default: return "OTHER";
  }
}

grpc::Status List(v1::Jobs::Stub& stub, const v1::ListJobsRequest& req, const std::string* cred,
                  const std::string* cred2 = nullptr) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  if (cred != nullptr) ctx.AddMetadata(auth::kMungeMetadata, *cred);
  if (cred2 != nullptr) ctx.AddMetadata(auth::kMungeMetadata, *cred2);
  v1::ListJobsResponse resp;
  return stub.List(&ctx, req, &resp);
}

void Print(const std::string& name, const grpc::Status& st) {
  std::printf("%s %s %s\n", name.c_str(), CodeName(st.error_code()), st.error_message().c_str());
  std::fflush(stdout);
}

std::string Encode(const std::string& socket, const std::string& payload, int ttl = 0) {
  auto cred = auth::MungeEncode(socket, payload, ttl);
  if (!cred) {
    std::fprintf(stderr, "munge_probe: cannot encode: %s\n", cred.error().message.c_str());
    std::exit(3);
  }
  return *cred;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: munge_probe TARGET MUNGE_SOCKET OTHER_MUNGE_SOCKET CASE...\n");
    return 2;
  }
  auto channel = grpc::CreateChannel(argv[1], grpc::InsecureChannelCredentials());
  auto stub = v1::Jobs::NewStub(channel);
  const std::string good_socket = argv[2], other_socket = argv[3];
  const v1::ListJobsRequest all;
  const std::string payload = auth::CallPayload(kList, all);
  for (int i = 4; i < argc; ++i) {
    const std::string c = argv[i];
    if (c == "none") {
      Print(c, List(*stub, all, nullptr));
    } else if (c == "good") {
      const std::string cred = Encode(good_socket, payload);
      Print(c, List(*stub, all, &cred));
    } else if (c == "forged") {
      const std::string cred = Encode(other_socket, payload);
      Print(c, List(*stub, all, &cred));
    } else if (c == "replay") {
      const std::string cred = Encode(good_socket, payload);
      Print("replay1", List(*stub, all, &cred));
      Print("replay2", List(*stub, all, &cred));
    } else if (c == "expired") {
      const std::string cred = Encode(good_socket, payload, 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(2200));
      Print(c, List(*stub, all, &cred));
    } else if (c == "other_request") {
      v1::ListJobsRequest one;
      one.set_limit(1);
      const std::string cred = Encode(good_socket, auth::CallPayload(kList, one));
      Print(c, List(*stub, all, &cred));
    } else if (c == "other_method") {
      const std::string cred = Encode(good_socket, auth::CallPayload("/phalanx.v1.Jobs/Get", all));
      Print(c, List(*stub, all, &cred));
    } else if (c == "twice") {
      const std::string a = Encode(good_socket, payload), b = Encode(good_socket, payload);
      Print(c, List(*stub, all, &a, &b));
    } else if (c.starts_with("flood:")) {
      const int n = std::stoi(c.substr(6));
      int refused = 0;
      for (int k = 0; k < n; ++k)
        refused += List(*stub, all, nullptr).error_code() == grpc::StatusCode::UNAUTHENTICATED;
      std::printf("flood %d/%d UNAUTHENTICATED\n", refused, n);
    } else {
      std::fprintf(stderr, "munge_probe: unknown case '%s'\n", c.c_str());
      return 2;
    }
  }
  return 0;
}
