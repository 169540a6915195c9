// The dashboard's side of phalanxd (service/dashboard.h) through its HTTP port, on the demo
// cluster with four fake agents: the page and its files (ETag, 304), the cluster map (every
// GPU's owner, the job's busbw and the best for its size), the fragmentation answers (now and
// when), a job's events (from the store: they survive a restart), samples, and the
// Server-Sent Events stream.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "daemon_harness.h"

namespace phalanx::service::testing {
namespace {

struct Reply {
  int status = 0;
  std::string head, body;
};

int Dial(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// HTTP/1.0 GET (the server closes after the reply).
Reply Get(int port, const std::string& path, const std::string& extra = "") {
  Reply r;
  const int fd = Dial(port);
  if (fd < 0) return r;
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n" + extra + "\r\n";
  (void)!write(fd, req.data(), req.size());
  std::string text;
  char buf[65536];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  close(fd);
  const size_t sp = text.find(' '), end = text.find("\r\n\r\n");
  if (sp == std::string::npos || end == std::string::npos) return r;
  r.status = std::atoi(text.c_str() + sp + 1);
  r.head = text.substr(0, end);
  r.body = text.substr(end + 4);
  return r;
}

std::string HeaderValue(const std::string& head, const std::string& name) {
  const size_t at = head.find("\r\n" + name + ": ");
  if (at == std::string::npos) return "";
  const size_t from = at + name.size() + 4;
  return head.substr(from, head.find("\r\n", from) - from);
}

// The integers of the JSON array that follows `"key":[` in `json`.
std::vector<long> IntArray(const std::string& json, const std::string& key) {
  std::vector<long> out;
  size_t at = json.find("\"" + key + "\":[");
  if (at == std::string::npos) return out;
  at += key.size() + 4;
  const size_t end = json.find(']', at);
  while (at < end) {
    out.push_back(std::strtol(json.c_str() + at, nullptr, 10));
    at = json.find(',', at);
    if (at == std::string::npos || at > end) break;
    ++at;
  }
  return out;
}

class DaemonDashboard : public ::testing::Test {
 protected:
  void SetUp() override {
    h.config.http_listen = "127.0.0.1:0";
    h.Start();
#ifndef PHALANX_HAVE_HTTP
    GTEST_SKIP() << "built without the HTTP library";
#endif
    port = h.daemon->http_port();
    ASSERT_GT(port, 0);
    for (int n = 0; n < 4; ++n) {
      agents.push_back(std::make_unique<FakeAgent>(h.AgentTarget(), "node" + std::to_string(n)));
      ASSERT_TRUE(agents.back()->Join()) << "node" << n;
    }
    ASSERT_TRUE(WaitFor([&] { return Get(port, "/api/v1/map").body.find("\"down\"") == std::string::npos; }));
  }

  std::vector<std::unique_ptr<FakeAgent>> agents;  // destroyed after the daemon
  Harness h;
  int port = 0;
};

TEST_F(DaemonDashboard, ServesThePageWithEtagsAnd304) {
  Reply page = Get(port, "/");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(HeaderValue(page.head, "Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("<script src=\"/static/dashboard.js\""), std::string::npos);
  EXPECT_NE(HeaderValue(page.head, "Content-Security-Policy").find("default-src 'self'"), std::string::npos);
  const std::string etag = HeaderValue(page.head, "ETag");
  ASSERT_EQ(etag.size(), 18u) << page.head;  // "<16 hex digits>"
  Reply again = Get(port, "/", "If-None-Match: " + etag + "\r\n");
  EXPECT_EQ(again.status, 304);
  EXPECT_TRUE(again.body.empty());
  Reply js = Get(port, "/static/chart.js");
  EXPECT_EQ(js.status, 200);
  EXPECT_EQ(HeaderValue(js.head, "Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_NE(js.body.find("global.PhxChart"), std::string::npos);
  EXPECT_NE(HeaderValue(js.head, "ETag"), etag);
  EXPECT_EQ(Get(port, "/static/nope.js").status, 404);
}

TEST_F(DaemonDashboard, MapAndFragmentationFollowARunningJob) {
  const uint64_t id = h.SubmitOk(Harness::Spec(16, "gang"));
  ASSERT_TRUE(h.WaitState(id, v1::JOB_STATE_RUNNING));
  const v1::Job job = h.Get(id);
  ASSERT_EQ(job.gpus_size(), 16);
  Reply map = Get(port, "/api/v1/map");
  ASSERT_EQ(map.status, 200);
  const std::vector<long> owner = IntArray(map.body, "owner");
  ASSERT_EQ(owner.size(), 32u) << map.body;
  // The demo's nodes are node0..node3 with 8 GPUs each, in order.
  std::vector<long> expected(32, 0);
  for (const v1::GpuRef& g : job.gpus())
    expected[std::stoi(g.node().substr(4)) * 8 + g.index()] = static_cast<long>(id);
  EXPECT_EQ(owner, expected);
  EXPECT_NE(map.body.find("[\"leaf\",\"leaf0\",0,0,16]"), std::string::npos) << map.body;
  EXPECT_NE(map.body.find("[\"node\",\"node3\",4,24,8,\"up\"]"), std::string::npos) << map.body;
  EXPECT_NE(map.body.find("\"" + std::to_string(id) + "\":{\"gpus\":16,\"busbw_gbs\":360,\"best_busbw_gbs\":360"),
            std::string::npos)
      << map.body;

  Reply frag = Get(port, "/api/v1/placeable");
  ASSERT_EQ(frag.status, 200);
  EXPECT_NE(frag.body.find("{\"level\":\"leaf\",\"domains\":2,\"domain_gpus\":16,\"largest_free_block\":16,"
                           "\"free_blocks\":[[16,1]]"),
            std::string::npos)
      << frag.body;
  // When (the core's what-if): 32 GPUs at the job's walltime end, 16 now.
  const std::string end_key = "\"expected_end\":";
  const size_t end_at = map.body.find(end_key);
  ASSERT_NE(end_at, std::string::npos) << map.body;
  const long end = std::atol(map.body.c_str() + end_at + end_key.size());
  const std::string now = std::to_string(std::atol(frag.body.c_str() + std::string("{\"now\":").size()));
  EXPECT_NE(frag.body.find("{\"gpus\":32,\"status\":\"busy\",\"reason\":\"Resources: 32 GPUs requested, 16 free\","
                           "\"start_s\":" +
                           std::to_string(end) + ",\"promised\":true,\"wait\":\"Resources\"}"),
            std::string::npos)
      << frag.body;
  EXPECT_NE(
      frag.body.find("{\"gpus\":16,\"status\":\"placed\",\"busbw_gbs\":360,\"start_s\":" + now + ",\"promised\":true}"),
      std::string::npos)
      << frag.body;

  // The job page reads the store's job history: the start is there once its write is committed
  // (group commit, behind the in-memory state the map shows).
  Reply events;
  EXPECT_TRUE(WaitFor([&] {
    events = Get(port, "/api/v1/jobs/" + std::to_string(id) + "/events");
    return events.status == 200 && events.body.find("\"kind\":\"start\"") != std::string::npos;
  })) << events.body;
  ASSERT_EQ(events.status, 200);
  const size_t submit = events.body.find("\"kind\":\"submit\""), start = events.body.find("\"kind\":\"start\"");
  EXPECT_NE(submit, std::string::npos) << events.body;
  EXPECT_NE(start, std::string::npos) << events.body;
  EXPECT_LT(submit, start);
  EXPECT_EQ(Get(port, "/api/v1/jobs/999/events").status, 404);
  EXPECT_EQ(Get(port, "/api/v1/jobs/x/events").status, 400);
  Reply samples = Get(port, "/api/v1/samples?since=0");
  EXPECT_EQ(samples.status, 200);
  EXPECT_NE(samples.body.find("\"samples\":[{\"time\":"), std::string::npos) << samples.body;
  EXPECT_EQ(Get(port, "/api/v1/samples?since=soon").status, 400);
}

// The job page's history comes from the store: after a restart the submit, start and
// checkpoint from before it are still there (the in-memory history starts empty), and new
// events follow them.
TEST_F(DaemonDashboard, JobEventsSurviveARestart) {
  const uint64_t id = h.SubmitOk(Harness::Spec(8, "kept"));
  ASSERT_TRUE(h.WaitState(id, v1::JOB_STATE_RUNNING));
  FakeAgent* runs = nullptr;
  ASSERT_TRUE(WaitFor([&] {
    for (auto& a : agents) {
      for (const auto& c : a->Commands()) {
        if (c.has_launch() && c.launch().job_id() == id) runs = a.get();
      }
    }
    return runs != nullptr;
  }));
  h.clock.Advance(60);
  ASSERT_TRUE(runs->Checkpoint(id, 1, "/ckpt/1"));
  const std::string path = "/api/v1/jobs/" + std::to_string(id) + "/events";
  Reply before;
  ASSERT_TRUE(WaitFor([&] {
    before = Get(port, path);
    return before.body.find("\"kind\":\"checkpoint_done\"") != std::string::npos;
  })) << before.body;
  const size_t submit = before.body.find("\"kind\":\"submit\""), start = before.body.find("\"kind\":\"start\"");
  ASSERT_NE(submit, std::string::npos) << before.body;
  ASSERT_NE(start, std::string::npos) << before.body;
  EXPECT_LT(submit, start);
  EXPECT_NE(before.body.find("reason=busbw "), std::string::npos) << "the payload unescaped: " << before.body;
  EXPECT_NE(
      before.body.find("\"time\":" + std::to_string(kT0 + 60) + ",\"kind\":\"checkpoint_done\",\"detail\":\"epoch=1"),
      std::string::npos)
      << before.body;

  h.Stop();
  for (auto& a : agents) a->Disconnect();
  h.clock.Advance(10);
  h.Start();
  port = h.daemon->http_port();
  Reply after = Get(port, path);
  ASSERT_EQ(after.status, 200) << after.body;
  // The same events, in the same order, with nothing claiming they predate this phalanxd.
  ASSERT_GE(after.body.size(), before.body.size() - 2) << after.body;
  EXPECT_EQ(after.body.substr(0, before.body.size() - 2), before.body.substr(0, before.body.size() - 2))
      << "before: " << before.body << "\nafter: " << after.body;
  EXPECT_EQ(after.body.find("before this phalanxd started"), std::string::npos) << after.body;
  // A new event follows them.
  ASSERT_TRUE(h.Cancel(id).ok());
  ASSERT_TRUE(WaitFor([&] {
    after = Get(port, path);
    return after.body.find("\"kind\":\"cancel") != std::string::npos;
  })) << after.body;
  EXPECT_EQ(after.body.substr(0, before.body.size() - 2), before.body.substr(0, before.body.size() - 2));
}

TEST_F(DaemonDashboard, EventStreamCarriesJobEvents) {
  const int fd = Dial(port);
  ASSERT_GE(fd, 0);
  const std::string req = "GET /api/v1/events HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n";
  ASSERT_EQ(write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  std::string text;
  const auto read_until = [&](const std::string& marker) {
    return WaitFor([&] {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 50) > 0) {
        char buf[65536];
        const ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) text.append(buf, static_cast<size_t>(n));
      }
      return text.find(marker) != std::string::npos;
    });
  };
  ASSERT_TRUE(read_until("retry: 2000\n\n")) << text;
  EXPECT_NE(text.find("Content-Type: text/event-stream"), std::string::npos) << text;
  const uint64_t id = h.SubmitOk(Harness::Spec(8, "streamed"));
  ASSERT_TRUE(read_until("\"kind\":\"start\"")) << text;
  const size_t ev = text.find("event: job\ndata: {\"time\":");
  ASSERT_NE(ev, std::string::npos) << text;
  EXPECT_NE(text.find("\"kind\":\"submit\",\"job\":{\"id\":\"" + std::to_string(id) + "\""), std::string::npos) << text;
  // A node drained: no job event, but a "nodes" event after the next pass, and the map shows it.
  grpc::ClientContext ctx;
  v1::NodeRequest drain;
  drain.set_node("node3");
  drain.set_reason("dashboard test");
  v1::Node node;
  ASSERT_TRUE(h.cluster->DrainNode(&ctx, drain, &node).ok());
  ASSERT_TRUE(read_until("event: nodes\ndata: {\"changed\":1}\n\n")) << text;
  EXPECT_NE(Get(port, "/api/v1/map").body.find("[\"node\",\"node3\",4,24,8,\"drain\"]"), std::string::npos);
  close(fd);
}

}  // namespace
}  // namespace phalanx::service::testing
