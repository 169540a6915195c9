// RequestGuard: Host names (DNS rebinding), Origins (cross-site reads), the admin token; the
// refusals' statuses and messages.
#include "service/http/guard.h"

#include <gtest/gtest.h>

#include "service/http/responses.h"

namespace phalanx::http {
namespace {

Request Get(std::vector<std::pair<std::string, std::string>> headers) {
  Request r;
  r.method = "GET";
  r.path = r.target = "/api/v1/jobs";
  for (auto& [k, v] : headers) r.headers[k] = v;
  return r;
}

RequestGuard Guard(std::string token = "t0ken") {
  GuardOptions o;
  o.hosts = DefaultAllowedHosts("127.0.0.1");
  o.hosts.push_back("Sched.Example.com");
  o.origins = {"https://dash.example.com"};
  o.admin_token = std::move(token);
  return RequestGuard(std::move(o));
}

int GuardStatus(const RequestGuard& g, const Request& r) {
  auto refusal = g.Check(r);
  return refusal ? refusal->status : 0;
}

TEST(HostName, DropsPortDotAndCase) {
  EXPECT_EQ(HostName("Example.COM:8080"), "example.com");
  EXPECT_EQ(HostName("localhost."), "localhost");
  EXPECT_EQ(HostName("[::1]:9464"), "::1");
  EXPECT_EQ(HostName("::1"), "::1");
  EXPECT_EQ(HostName("127.0.0.1"), "127.0.0.1");
}

TEST(DefaultAllowedHosts, LoopbackNamesAndTheBoundHostUnlessWildcard) {
  EXPECT_EQ(DefaultAllowedHosts("0.0.0.0"), (std::vector<std::string>{"localhost", "127.0.0.1", "::1"}));
  EXPECT_EQ(DefaultAllowedHosts("::"), (std::vector<std::string>{"localhost", "127.0.0.1", "::1"}));
  EXPECT_EQ(DefaultAllowedHosts("10.0.0.5"), (std::vector<std::string>{"localhost", "127.0.0.1", "::1", "10.0.0.5"}));
}

TEST(RequestGuard, HostMustBeOneOfTheServersNames) {
  const RequestGuard g = Guard();
  EXPECT_EQ(GuardStatus(g, Get({{"host", "127.0.0.1:9464"}})), 0);
  EXPECT_EQ(GuardStatus(g, Get({{"host", "LOCALHOST:9464"}})), 0);
  EXPECT_EQ(GuardStatus(g, Get({{"host", "[::1]:9464"}})), 0);
  EXPECT_EQ(GuardStatus(g, Get({{"host", "sched.example.com"}})), 0) << "configured names, any case";
  auto rebound = g.Check(Get({{"host", "evil.example:9464"}}));
  ASSERT_TRUE(rebound);
  EXPECT_EQ(rebound->status, 421);
  EXPECT_NE(rebound->body.find("Host: 'evil.example:9464' is not a name of this server"), std::string::npos)
      << rebound->body;
  EXPECT_EQ(GuardStatus(g, Get({})), 400) << "no Host header";
  EXPECT_EQ(GuardStatus(g, Get({{"host", "127.0.0.1.evil.example"}})), 421);
}

TEST(RequestGuard, ForeignOriginsAreRefused) {
  const RequestGuard g = Guard();
  EXPECT_EQ(GuardStatus(g, Get({{"host", "127.0.0.1:9464"}, {"origin", "http://127.0.0.1:9464"}})), 0) << "same origin";
  EXPECT_EQ(GuardStatus(g, Get({{"host", "127.0.0.1:9464"}, {"origin", "https://dash.example.com"}})), 0)
      << "configured";
  auto foreign = g.Check(Get({{"host", "127.0.0.1:9464"}, {"origin", "https://evil.example"}}));
  ASSERT_TRUE(foreign);
  EXPECT_EQ(foreign->status, 403);
  EXPECT_NE(foreign->body.find("Origin: 'https://evil.example' is not this server's origin"), std::string::npos)
      << foreign->body;
  EXPECT_EQ(GuardStatus(g, Get({{"host", "127.0.0.1:9464"}, {"origin", "null"}})), 403);
  EXPECT_EQ(GuardStatus(g, Get({{"host", "127.0.0.1:9464"}, {"origin", "http://127.0.0.1:9999"}})), 403)
      << "another port is another origin";
}

TEST(RequestGuard, AdminTokenInConstantTimeElse401) {
  const RequestGuard g = Guard();
  const Request anon = Get({{"host", "localhost"}});
  EXPECT_EQ(GuardStatus(g, anon), 0);
  EXPECT_FALSE(g.Admin(anon));
  const Request admin = Get({{"host", "localhost"}, {"authorization", "Bearer t0ken"}});
  EXPECT_EQ(GuardStatus(g, admin), 0);
  EXPECT_TRUE(g.Admin(admin));
  for (const char* bad : {"Bearer t0ke", "Bearer t0kenX", "Basic dDBrZW4=", "Bearer "}) {
    const Request r = Get({{"host", "localhost"}, {"authorization", bad}});
    auto refusal = g.Check(r);
    ASSERT_TRUE(refusal) << bad;
    EXPECT_EQ(refusal->status, 401) << bad;
    EXPECT_FALSE(g.Admin(r)) << bad;
    bool challenge = false;
    for (const auto& [k, v] : refusal->headers) challenge |= k == "WWW-Authenticate" && v.starts_with("Bearer");
    EXPECT_TRUE(challenge) << bad;
  }
  const RequestGuard none = Guard("");
  auto no_token = none.Check(Get({{"host", "localhost"}, {"authorization", "Bearer t0ken"}}));
  ASSERT_TRUE(no_token);
  EXPECT_EQ(no_token->status, 401);
  EXPECT_NE(no_token->body.find("no admin token is configured"), std::string::npos) << no_token->body;
}

TEST(RequestGuard, WrapChecksBeforeTheHandler) {
  int calls = 0;
  const Handler h = Guard().Wrap([&calls](const Request&) {
    ++calls;
    return TextResponse(200, "ok");
  });
  EXPECT_EQ(h(Get({{"host", "evil.example"}})).status, 421);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(h(Get({{"host", "localhost"}})).status, 200);
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace phalanx::http
