// The one mapping from the code base's errors to the statuses clients see.
#include "service/rpc_util.h"

#include <gtest/gtest.h>

namespace phalanx::service {
namespace {

TEST(RpcUtil, EveryErrorCodeMapsToItsGrpcNamesake) {
  const std::pair<ErrorCode, grpc::StatusCode> table[] = {
      {ErrorCode::kInvalidArgument, grpc::StatusCode::INVALID_ARGUMENT},
      {ErrorCode::kNotFound, grpc::StatusCode::NOT_FOUND},
      {ErrorCode::kFailedPrecondition, grpc::StatusCode::FAILED_PRECONDITION},
      {ErrorCode::kAlreadyExists, grpc::StatusCode::ALREADY_EXISTS},
      {ErrorCode::kResourceExhausted, grpc::StatusCode::RESOURCE_EXHAUSTED},
      {ErrorCode::kPermissionDenied, grpc::StatusCode::PERMISSION_DENIED},
      {ErrorCode::kInternal, grpc::StatusCode::INTERNAL},
  };
  for (const auto& [code, grpc_code] : table) {
    EXPECT_EQ(ToGrpcCode(code), grpc_code) << ErrorCodeName(code);
    const grpc::Status st = ToGrpcStatus(Error{"job 7", "no such job", code});
    EXPECT_EQ(st.error_code(), grpc_code) << ErrorCodeName(code);
  }
}

TEST(RpcUtil, TheMessageIsWhereThenWhat) {
  EXPECT_EQ(ToGrpcStatus(Error{"job 7", "no such job", ErrorCode::kNotFound}).error_message(), "job 7: no such job");
  EXPECT_EQ(ToGrpcStatus(Error{"", "cancel job 7: it belongs to bob", ErrorCode::kPermissionDenied}).error_message(),
            "cancel job 7: it belongs to bob");
  // Fail() without a code is an invalid argument.
  const Status bad = Fail("spec.gpus", "must be at least 1 (got 0)");
  const grpc::Status st = ToGrpcStatus(bad.error());
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "spec.gpus: must be at least 1 (got 0)");
}

TEST(RpcUtil, ControllerRepliesMapTheirErrorOrUnavailable) {
  EXPECT_TRUE(ToGrpcStatus(CallStatus{}).ok());
  const CallStatus not_found = Fail(ErrorCode::kNotFound, "node n9", "no such node");
  EXPECT_EQ(ToGrpcStatus(not_found).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(ToGrpcStatus(not_found).error_message(), "node n9: no such node");
  const grpc::Status down = ToGrpcStatus(CallError::Unavailable("phalanxd is shutting down"));
  EXPECT_EQ(down.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(down.error_message(), "phalanxd is shutting down");
}

}  // namespace
}  // namespace phalanx::service
