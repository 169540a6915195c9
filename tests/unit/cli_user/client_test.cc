#include "client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "signal_names.h"

namespace phalanx::cli {
namespace {

using ::testing::HasSubstr;

TEST(ResolveSocket, FlagThenEnvironmentThenDefault) {
  EXPECT_EQ(ResolveSocket("/tmp/a.sock", "/tmp/b.sock", "/home"), "/tmp/a.sock");
  EXPECT_EQ(ResolveSocket("", "/tmp/b.sock", "/home"), "/tmp/b.sock");
  EXPECT_EQ(ResolveSocket("", "", "/home"), "/run/phalanx/phalanxd.sock");
  EXPECT_EQ(ResolveSocket("", nullptr, "/home"), "/run/phalanx/phalanxd.sock");
  EXPECT_EQ(ResolveSocket("d.sock", nullptr, "/home/ada"), "/home/ada/d.sock");
  EXPECT_EQ(ResolveSocket("d.sock", nullptr, "/"), "/d.sock");
}

TEST(ResolveDeadline, EnvironmentOrThirtySeconds) {
  EXPECT_EQ(ResolveDeadline(nullptr).count(), 30);
  EXPECT_EQ(ResolveDeadline("5").count(), 5);
  EXPECT_EQ(ResolveDeadline("0").count(), 30);
  EXPECT_EQ(ResolveDeadline("soon").count(), 30);
}

TEST(Connection, DescribesStatuses) {
  Connection conn("/tmp/x.sock", std::chrono::seconds(7));
  EXPECT_EQ(conn.target(), "unix:/tmp/x.sock");
  EXPECT_EQ(conn.Describe(grpc::Status(grpc::StatusCode::NOT_FOUND, "")), "not found");
  EXPECT_EQ(conn.Describe(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "spec.gpus: 0 is not a GPU count")),
            "spec.gpus: 0 is not a GPU count");
  EXPECT_EQ(conn.Describe(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                       "failed to connect to all addresses; last error: UNKNOWN: unix:/tmp/x.sock: "
                                       "No such file or directory")),
            "cannot reach phalanxd at unix:/tmp/x.sock: No such file or directory (is phalanxd running? --socket or "
            "$PHALANX_SOCKET choose the socket)");
  EXPECT_THAT(conn.Describe(grpc::Status(grpc::StatusCode::UNAVAILABLE, "Connection refused")),
              HasSubstr("cannot reach phalanxd at unix:/tmp/x.sock: Connection refused"));
  EXPECT_EQ(conn.Describe(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded")),
            "phalanxd at unix:/tmp/x.sock did not answer within 7 s ($PHALANX_TIMEOUT sets the limit)");
}

TEST(Connection, DescribesJobErrorsOnce) {
  Connection conn("/tmp/x.sock", std::chrono::seconds(7));
  EXPECT_EQ(conn.DescribeJob(42, grpc::Status(grpc::StatusCode::NOT_FOUND, "not found")), "job 42: not found");
  EXPECT_EQ(conn.DescribeJob(42, grpc::Status(grpc::StatusCode::NOT_FOUND, "")), "job 42: not found");
  EXPECT_EQ(conn.DescribeJob(42, grpc::Status(grpc::StatusCode::NOT_FOUND, "job 42 not found")), "job 42: not found");
  EXPECT_EQ(conn.DescribeJob(42, grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "job 42: owned by bob")),
            "job 42: owned by bob");
  EXPECT_EQ(conn.DescribeJob(4, grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "job 42 has ended")),
            "job 4: job 42 has ended");
  EXPECT_THAT(conn.DescribeJob(4, grpc::Status(grpc::StatusCode::UNAVAILABLE, "Connection refused")),
              ::testing::StartsWith("cannot reach phalanxd at unix:/tmp/x.sock: Connection refused"));
}

TEST(Json, ProtoFieldNamesAndDefaults) {
  v1::SubmitResponse r;
  r.set_job_id(42);
  EXPECT_EQ(ToJson(r), R"({"job_id":"42"})");
  EXPECT_EQ(ToJson(v1::CancelResponse()), R"({"state":"JOB_STATE_UNSPECIFIED"})");
}

TEST(Signals, NamesAndNumbers) {
  EXPECT_EQ(ParseSignal("USR1").value(), SIGUSR1);
  EXPECT_EQ(ParseSignal("SIGUSR1").value(), SIGUSR1);
  EXPECT_EQ(ParseSignal("sigterm").value(), SIGTERM);
  EXPECT_EQ(ParseSignal("9").value(), 9);
  EXPECT_THAT(ParseSignal("0").error().message, HasSubstr("'0' is not a signal number (1..64)"));
  EXPECT_THAT(ParseSignal("SIG").error().message, HasSubstr("'SIG' is not a signal"));
  EXPECT_THAT(ParseSignal("").error().message, HasSubstr("'' is not a signal"));
  EXPECT_EQ(SignalName(SIGUSR2), "USR2");
  EXPECT_EQ(SignalName(40), "40");
}

}  // namespace
}  // namespace phalanx::cli
