// JSON replies from API messages (proto3 JSON mapping, snake_case names) and error JSON.
#include "service/http/responses.h"

#include <gtest/gtest.h>

#include "phalanx/v1/phalanx.pb.h"

namespace phalanx::http {
namespace {

TEST(JsonResponseTest, ProtoFieldNamesAndDefaultsPrinted) {
  v1::LevelFragmentation level;
  level.set_level("leaf");
  level.set_domains(4);
  level.set_whole_free(1);
  level.set_largest_free_block(8);
  Response r = JsonResponse(level);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.body, R"({"level":"leaf","domains":4,"whole_free":1,"largest_free_block":8,)"
                    R"("domain_gpus":0})");
}

TEST(JsonResponseTest, SixtyFourBitIntegersAreStringsEnumsAreNames) {
  v1::Job job;
  job.set_id(42);
  job.set_state(v1::JOB_STATE_RUNNING);
  job.set_submit_time(1700000000);
  job.set_busbw_gbs(370.5);
  job.mutable_spec()->set_gpus(16);
  job.mutable_spec()->set_topology(v1::TOPOLOGY_LEVEL_LEAF);
  auto* gpu = job.add_gpus();
  gpu->set_node("dgx01");
  gpu->set_index(3);
  Response r = JsonResponse(job, 201);
  EXPECT_EQ(r.status, 201);
  for (const char* want :
       {R"("id":"42")", R"("state":"JOB_STATE_RUNNING")", R"("submit_time":"1700000000")", R"("busbw_gbs":370.5)",
        R"("gpus":16)", R"("topology":"TOPOLOGY_LEVEL_LEAF")", R"("gpus":[{"node":"dgx01","index":3}])",
        R"("held":false)", R"("reason":"")", R"("after_ok":[])"}) {
    EXPECT_NE(r.body.find(want), std::string::npos) << want << " not in " << r.body;
  }
  EXPECT_EQ(r.body.find("submitTime"), std::string::npos);
}

TEST(JsonResponseTest, MapsAndRepeatedMessages) {
  v1::GetStatsResponse stats;
  stats.set_gpus_total(64);
  (*stats.mutable_jobs_by_state())["running"] = 3;
  Response r = JsonResponse(stats);
  EXPECT_NE(r.body.find(R"("jobs_by_state":{"running":3})"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find(R"("gpus_total":64)"), std::string::npos) << r.body;
}

TEST(ErrorResponseTest, EscapedJson) {
  Response r = ErrorResponse(404, "job \"7\" not found\n\\ \x01 \xff");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.body, "{\"error\":\"job \\\"7\\\" not found\\n\\\\ \\u0001 \xEF\xBF\xBD\"}");
}

TEST(MetricsResponseTest, ContentTypeAndBody) {
  MetricsRegistry registry;
  ASSERT_TRUE(registry.AddGauge("up_now", "h"));
  Response r = MetricsResponse(registry);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(r.body, "# HELP up_now h\n# TYPE up_now gauge\nup_now 0\n");
}

}  // namespace
}  // namespace phalanx::http
