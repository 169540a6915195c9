#include "service/http/router.h"

#include <gtest/gtest.h>

#include "service/http/responses.h"

namespace phalanx::http {
namespace {

Request Make(std::string method, std::string path) {
  Request r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.target = r.path;
  return r;
}

// A handler that answers "<name> key=value ..." for the matched route.
RouteHandler Named(std::string name) {
  return [name](const Request&, const PathParams& params) {
    std::string out = name;
    for (const auto& [k, v] : params) out += " " + k + "=" + v;
    return TextResponse(200, out);
  };
}

class RouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(router_.Get("/", Named("root")));
    ASSERT_TRUE(router_.Get("/metrics", Named("metrics")));
    ASSERT_TRUE(router_.Get("/api/v1/jobs", Named("list")));
    ASSERT_TRUE(router_.Post("/api/v1/jobs", Named("submit")));
    ASSERT_TRUE(router_.Get("/api/v1/jobs/{id}", Named("job")));
    ASSERT_TRUE(router_.Add("DELETE", "/api/v1/jobs/{id}", Named("cancel")));
    ASSERT_TRUE(router_.Get("/api/v1/jobs/stats", Named("job-stats")));
    ASSERT_TRUE(router_.Get("/api/v1/nodes/{node}/gpus/{gpu}", Named("gpu")));
    ASSERT_TRUE(router_.Get("/static/*", Named("static")));
  }
  std::string Body(std::string method, std::string path) {
    Response r = router_.Handle(Make(std::move(method), std::move(path)));
    return std::to_string(r.status) + " " + r.body;
  }
  Router router_;
};

TEST_F(RouterTest, LiteralParamAndRestRoutes) {
  EXPECT_EQ(Body("GET", "/"), "200 root");
  EXPECT_EQ(Body("GET", "/metrics"), "200 metrics");
  EXPECT_EQ(Body("GET", "/api/v1/jobs"), "200 list");
  EXPECT_EQ(Body("POST", "/api/v1/jobs"), "200 submit");
  EXPECT_EQ(Body("GET", "/api/v1/jobs/42"), "200 job id=42");
  EXPECT_EQ(Body("DELETE", "/api/v1/jobs/42"), "200 cancel id=42");
  EXPECT_EQ(Body("GET", "/api/v1/jobs/stats"), "200 job-stats");  // literal beats {id}
  EXPECT_EQ(Body("GET", "/api/v1/nodes/dgx%2D01/gpus/3"), "200 gpu gpu=3 node=dgx-01");
  EXPECT_EQ(Body("GET", "/static/"), "200 static *=");
  EXPECT_EQ(Body("GET", "/static"), "200 static *=");
  EXPECT_EQ(Body("GET", "/static/css/a%20b.css"), "200 static *=css/a b.css");
}

TEST_F(RouterTest, HeadUsesGet) { EXPECT_EQ(Body("HEAD", "/api/v1/jobs/7"), "200 job id=7"); }

TEST_F(RouterTest, NotFound) {
  EXPECT_EQ(Body("GET", "/api/v1/jobs/"), "404 {\"error\":\"no such endpoint: /api/v1/jobs/\"}");
  EXPECT_EQ(Body("GET", "/api/v1/job"), "404 {\"error\":\"no such endpoint: /api/v1/job\"}");
  EXPECT_EQ(Body("GET", "/metrics/x"), "404 {\"error\":\"no such endpoint: /metrics/x\"}");
  EXPECT_EQ(Body("GET", "/api/v1/nodes/a/gpus"),
            "404 {\"error\":\"no such endpoint: "
            "/api/v1/nodes/a/gpus\"}");
}

TEST_F(RouterTest, WrongMethodIs405WithAllow) {
  Response r = router_.Handle(Make("PUT", "/api/v1/jobs/9"));
  EXPECT_EQ(r.status, 405);
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.headers[0].first, "Allow");
  EXPECT_EQ(r.headers[0].second, "DELETE, GET, HEAD");
  EXPECT_EQ(r.body,
            "{\"error\":\"method PUT not allowed for /api/v1/jobs/9 (allowed: DELETE, GET, "
            "HEAD)\"}");
  EXPECT_EQ(router_.Handle(Make("POST", "/metrics")).status, 405);
}

TEST_F(RouterTest, BadEscapeInParamIs400) {
  EXPECT_EQ(Body("GET", "/api/v1/jobs/%zz"), "400 {\"error\":\"bad path: bad percent-escape '%zz' in '%zz'\"}");
}

TEST(RouterAddTest, RejectsBadPatterns) {
  Router router;
  auto error = [&](std::string method, std::string pattern) {
    Status s = router.Add(method, pattern, Named("x"));
    return s ? std::string("(accepted)") : s.error().ToString();
  };
  EXPECT_EQ(error("get", "/a"), "get /a: method must be an upper-case token");
  EXPECT_EQ(error("GET", "a"), "GET a: pattern must start with '/'");
  EXPECT_EQ(error("GET", "/a/{}"), "GET /a/{}: parameter name '' must match [A-Za-z0-9_]+");
  EXPECT_EQ(error("GET", "/a/{x}/{x}"), "GET /a/{x}/{x}: parameter {x} repeats");
  EXPECT_EQ(error("GET", "/a/*/b"), "GET /a/*/b: '*' must be the last segment");
  EXPECT_EQ(error("GET", "/a/x{id}"),
            "GET /a/x{id}: segment 'x{id}' mixes text with '{', '}' or '*' (use a whole segment)");
  EXPECT_EQ(error("GET", "/jobs/{id}"), "(accepted)");
  EXPECT_EQ(error("GET", "/jobs/{job}"), "GET /jobs/{job}: same route as /jobs/{id}");
  EXPECT_EQ(error("POST", "/jobs/{job}"), "(accepted)");
  EXPECT_EQ(router.Add("GET", "/h", RouteHandler()).error().message, "no handler");
}

TEST(RouterAddTest, ToHandlerKeepsTheRoutes) {
  Router router;
  ASSERT_TRUE(router.Get("/x", Named("x")));
  Handler handler = std::move(router).ToHandler();
  EXPECT_EQ(handler(Make("GET", "/x")).body, "x");
  EXPECT_EQ(handler(Make("GET", "/y")).status, 404);
}

}  // namespace
}  // namespace phalanx::http
