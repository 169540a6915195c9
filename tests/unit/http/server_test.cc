// phalanx::http::Server over real sockets on 127.0.0.1:0, driven by the Beast test client:
// routing, keep-alive and pipelining, limits (413, 431, 400), timeouts (idle, slowloris header,
// slow body), connection limits, handler errors, HEAD, Stop() and bind errors.
#include "service/http/server.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <boost/asio/post.hpp>

#include "service/http/responses.h"
#include "service/http/router.h"
#include "test_client.h"

namespace phalanx::http {
namespace {

using namespace std::chrono_literals;
using testing::ClientResponse;
using testing::TestClient;

// The server on its own io_context thread, as in phalanxd.
class ServerTest : public ::testing::Test {
 protected:
  void StartServer(Handler handler, ServerOptions options = {}) {
    auto server = Server::Start(io_, "127.0.0.1", 0, std::move(handler), options);
    ASSERT_TRUE(server) << server.error().ToString();
    server_ = std::move(*server);
    ASSERT_NE(server_->port(), 0);
    thread_ = std::thread([this] {
      io_.run();
      ran_out_.set_value();
    });
  }

  // Stops the server on its thread and checks that the io_context then runs out of work.
  void StopServer() {
    if (!thread_.joinable()) return;
    boost::asio::post(io_, [this] { server_->Stop(); });
    if (ran_out_.get_future().wait_for(10s) != std::future_status::ready) {
      ADD_FAILURE() << "io_context still has work 10 s after Stop()";
      io_.stop();
    }
    thread_.join();
  }

  void TearDown() override { StopServer(); }

  TestClient Connect() {
    TestClient client;
    Status s = client.Connect("127.0.0.1", server_->port());
    EXPECT_TRUE(s) << s.error().ToString();
    return client;
  }

  Router EchoRouter() {
    Router router;
    EXPECT_TRUE(router.Get("/healthz", [](const Request&, const PathParams&) { return TextResponse(200, "ok\n"); }));
    EXPECT_TRUE(router.Add("GET", "/echo", [](const Request& r, const PathParams&) {
      std::string out = r.method + " " + r.path;
      for (const auto& [k, v] : r.query) out += " " + k + "=" + v;
      out += " ua=" + std::string(r.Header("user-agent"));
      return TextResponse(200, out);
    }));
    EXPECT_TRUE(router.Post("/echo", [](const Request& r, const PathParams&) {
      return TextResponse(200, "got " + std::to_string(r.body.size()) + " bytes: " + r.body.substr(0, 16));
    }));
    EXPECT_TRUE(router.Get("/api/v1/jobs/{id}", [](const Request& r, const PathParams& p) {
      return TextResponse(200, "job " + p.at("id") + " from " + r.remote.substr(0, 10));
    }));
    EXPECT_TRUE(
        router.Get("/throw", [](const Request&, const PathParams&) -> Response { throw std::runtime_error("boom"); }));
    return router;
  }

  boost::asio::io_context io_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
  std::promise<void> ran_out_;
};

TEST_F(ServerTest, ServesRoutesWithQueryAndPathParams) {
  StartServer(EchoRouter().ToHandler());
  TestClient client = Connect();
  auto r = client.Fetch("GET", "/echo?b=x%20y&a=1&b=z+w", {}, {{"User-Agent", "t/1"}});
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->result_int(), 200);
  EXPECT_EQ(r->body(), "GET /echo a=1 b=x y b=z w ua=t/1");
  EXPECT_EQ((*r)[boost::beast::http::field::content_type], "text/plain; charset=utf-8");
  EXPECT_EQ((*r)[boost::beast::http::field::server], "phalanxd");

  r = client.Fetch("GET", "/api/v1/jobs/4%32");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->body(), "job 42 from 127.0.0.1:");
}

TEST_F(ServerTest, KeepAliveServesTwoRequestsOnOneConnection) {
  StartServer(EchoRouter().ToHandler());
  TestClient client = Connect();
  for (int i = 0; i < 2; ++i) {
    auto r = client.Fetch("GET", "/healthz");
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(r->result_int(), 200);
    EXPECT_EQ(r->body(), "ok\n");
    EXPECT_TRUE(r->keep_alive());
  }
  StopServer();
  EXPECT_EQ(server_->stats().accepted, 1u);
  EXPECT_EQ(server_->stats().requests, 2u);
}

TEST_F(ServerTest, PipelinedRequestsAreAnsweredInOrder) {
  StartServer(EchoRouter().ToHandler());
  TestClient client = Connect();
  ASSERT_TRUE(
      client.Write("GET /echo?n=1 HTTP/1.1\r\nHost: x\r\n\r\n"
                   "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
                   "GET /echo?n=3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  auto a = client.Read();
  auto b = client.Read();
  auto c = client.Read();
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->body(), "GET /echo n=1 ua=");
  EXPECT_EQ(b->body(), "got 5 bytes: hello");
  EXPECT_EQ(c->body(), "GET /echo n=3 ua=");
  EXPECT_FALSE(c->keep_alive());
  EXPECT_TRUE(client.WaitClosed(2s));
}

TEST_F(ServerTest, UnknownPathIs404AndWrongMethodIs405) {
  StartServer(EchoRouter().ToHandler());
  TestClient client = Connect();
  auto r = client.Fetch("GET", "/nope");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 404);
  EXPECT_EQ((*r)[boost::beast::http::field::content_type], "application/json");
  EXPECT_EQ(r->body(), R"({"error":"no such endpoint: /nope"})");
  r = client.Fetch("DELETE", "/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 405);
  EXPECT_EQ((*r)[boost::beast::http::field::allow], "GET, HEAD");
  EXPECT_TRUE(r->keep_alive());  // a routing error does not end the connection
  r = client.Fetch("PUT", "/echo", "x");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 405);
  EXPECT_EQ((*r)[boost::beast::http::field::allow], "GET, HEAD, POST");
}

TEST_F(ServerTest, MegabyteBodyIsRefusedWith413) {
  StartServer(EchoRouter().ToHandler());  // max_body_bytes: 64 KiB by default
  TestClient client = Connect();
  std::string body(1 << 20, 'x');
  auto r = client.Fetch("POST", "/echo", body);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->result_int(), 413);
  EXPECT_FALSE(r->keep_alive());
  EXPECT_NE(r->body().find("1048576 bytes is larger than 65536"), std::string::npos) << r->body();
  EXPECT_TRUE(client.WaitClosed(3s));
  // A body under the limit is fine.
  TestClient again = Connect();
  r = again.Fetch("POST", "/echo", std::string(60000, 'y'));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 200);
  EXPECT_EQ(r->body(), "got 60000 bytes: yyyyyyyyyyyyyyyy");
}

TEST_F(ServerTest, ChunkedBodyOverTheLimitIs413) {
  ServerOptions options;
  options.max_body_bytes = 1000;
  StartServer(EchoRouter().ToHandler(), options);
  TestClient client = Connect();
  std::string chunk(800, 'z');
  std::string request =
      "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "320\r\n" +
      chunk + "\r\n320\r\n" + chunk + "\r\n0\r\n\r\n";
  ASSERT_TRUE(client.Write(request));
  auto r = client.Read();
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->result_int(), 413);
}

TEST_F(ServerTest, ExpectContinueTooLargeIsRefusedBeforeTheBody) {
  StartServer(EchoRouter().ToHandler());
  TestClient client = Connect();
  ASSERT_TRUE(
      client.Write("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n"
                   "Expect: 100-continue\r\n\r\n"));
  auto r = client.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 413);
  // Within the limit the server says 100 Continue, then answers.
  TestClient ok = Connect();
  ASSERT_TRUE(
      ok.Write("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
               "Expect: 100-continue\r\n\r\n"));
  r = ok.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 100);
  ASSERT_TRUE(ok.Write("abc"));
  r = ok.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body(), "got 3 bytes: abc");
}

TEST_F(ServerTest, OversizedHeaderIs431AndGarbageIs400) {
  ServerOptions options;
  options.max_header_bytes = 4096;
  StartServer(EchoRouter().ToHandler(), options);
  TestClient client = Connect();
  auto r = client.Fetch("GET", "/healthz", {}, {{"X-Big", std::string(8000, 'b')}});
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->result_int(), 431);

  TestClient garbage = Connect();
  ASSERT_TRUE(garbage.Write("NOT HTTP AT ALL\r\n\r\n"));
  r = garbage.Read();
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->result_int(), 400);
  EXPECT_TRUE(garbage.WaitClosed(3s));

  TestClient bad_query = Connect();
  r = bad_query.Fetch("GET", "/echo?a=%zz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 400);
  EXPECT_EQ(r->body(), R"({"error":"bad query string: bad percent-escape '%zz' in '%zz'"})");

  TestClient absolute = Connect();
  r = absolute.Fetch("GET", "http://example.com/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 400);
  StopServer();
  EXPECT_EQ(server_->stats().bad_requests, 4u);
}

TEST_F(ServerTest, SlowlorisHeaderIsClosedAfterTheHeaderTimeout) {
  ServerOptions options;
  options.header_timeout = 300ms;
  StartServer(EchoRouter().ToHandler(), options);
  TestClient client = Connect();
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(client.Write("GET /healthz HTTP/1.1\r\nHost: x\r\n"));  // never finished
  Status closed = client.WaitClosed(5s);
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(closed) << closed.error().ToString();
  EXPECT_GE(waited, 250ms);
  EXPECT_LT(waited, 3s);
  EXPECT_EQ(client.buffered(), 0u);  // no reply, just closed
  StopServer();
  EXPECT_EQ(server_->stats().timeouts, 1u);
  EXPECT_EQ(server_->stats().requests, 0u);
}

TEST_F(ServerTest, SlowBodyIsClosedAfterTheBodyTimeout) {
  ServerOptions options;
  options.body_timeout = 300ms;
  StartServer(EchoRouter().ToHandler(), options);
  TestClient client = Connect();
  ASSERT_TRUE(client.Write("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc"));
  EXPECT_TRUE(client.WaitClosed(5s));
  StopServer();
  EXPECT_EQ(server_->stats().timeouts, 1u);
}

TEST_F(ServerTest, IdleKeepAliveConnectionIsClosedAfterTheIdleTimeout) {
  ServerOptions options;
  options.idle_timeout = 300ms;
  options.header_timeout = 10s;
  StartServer(EchoRouter().ToHandler(), options);
  TestClient client = Connect();
  auto r = client.Fetch("GET", "/healthz");
  ASSERT_TRUE(r);
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(client.WaitClosed(5s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
}

TEST_F(ServerTest, ManyConcurrentConnections) {
  StartServer(EchoRouter().ToHandler());
  constexpr int kClients = 64;
  std::vector<TestClient> clients(kClients);
  for (TestClient& c : clients) ASSERT_TRUE(c.Connect("127.0.0.1", server_->port()));
  for (int i = 0; i < kClients; ++i) {
    ASSERT_TRUE(clients[i].Send("GET", "/echo?i=" + std::to_string(i)));
  }
  for (int i = kClients - 1; i >= 0; --i) {
    auto r = clients[i].Read();
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(r->body(), "GET /echo i=" + std::to_string(i) + " ua=");
  }
  StopServer();
  EXPECT_EQ(server_->stats().accepted, static_cast<uint64_t>(kClients));
  EXPECT_EQ(server_->stats().active, static_cast<uint64_t>(0));
}

TEST_F(ServerTest, ConnectionsPastTheLimitAreClosed) {
  ServerOptions options;
  options.max_connections = 2;
  StartServer(EchoRouter().ToHandler(), options);
  TestClient a = Connect(), b = Connect();
  ASSERT_TRUE(a.Fetch("GET", "/healthz"));
  ASSERT_TRUE(b.Fetch("GET", "/healthz"));
  TestClient c = Connect();
  EXPECT_TRUE(c.WaitClosed(3s));
  ASSERT_TRUE(a.Fetch("GET", "/healthz"));  // the first two still work
  StopServer();
  EXPECT_EQ(server_->stats().rejected, 1u);
}

TEST_F(ServerTest, ThrowingHandlerGets500AndTheConnectionGoesOn) {
  StartServer(EchoRouter().ToHandler());
  TestClient client = Connect();
  auto r = client.Fetch("GET", "/throw");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 500);
  EXPECT_EQ(r->body(), R"({"error":"internal error: boom"})");
  r = client.Fetch("GET", "/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 200);
}

TEST_F(ServerTest, HeadKeepsContentLengthWithoutBody) {
  StartServer(EchoRouter().ToHandler());
  TestClient client = Connect();
  auto r = client.Fetch("HEAD", "/healthz");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->result_int(), 200);
  EXPECT_EQ((*r)[boost::beast::http::field::content_length], "3");
  EXPECT_EQ(r->body(), "");
  r = client.Fetch("GET", "/healthz");  // the connection is still in step
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body(), "ok\n");
}

TEST_F(ServerTest, Http10ClosesUnlessKeepAlive) {
  StartServer(EchoRouter().ToHandler());
  TestClient client = Connect();
  ASSERT_TRUE(client.Write("GET /healthz HTTP/1.0\r\n\r\n"));
  auto r = client.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->version(), 10u);
  EXPECT_EQ(r->body(), "ok\n");
  EXPECT_TRUE(client.WaitClosed(3s));
}

TEST_F(ServerTest, ExtraHeadersAndBadStatus) {
  StartServer([](const Request& r) {
    Response out = TextResponse(r.path == "/bad" ? 42 : 201, "made");
    out.headers = {{"Cache-Control", "no-store"},
                   {"Content-Length", "999"},            // ignored: the server's
                   {"X-Evil", "a\r\nSet-Cookie: x=y"}};  // ignored: would break framing
    return out;
  });
  TestClient client = Connect();
  auto r = client.Fetch("GET", "/ok");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 201);
  EXPECT_EQ((*r)["Cache-Control"], "no-store");
  EXPECT_EQ((*r)[boost::beast::http::field::content_length], "4");
  EXPECT_EQ((*r)["X-Evil"], "");
  EXPECT_EQ((*r)["Set-Cookie"], "");
  r = client.Fetch("GET", "/bad");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->result_int(), 500);
}

TEST_F(ServerTest, StopClosesOpenConnectionsAndLeavesNoWork) {
  StartServer(EchoRouter().ToHandler());
  TestClient idle = Connect();
  TestClient half = Connect();
  ASSERT_TRUE(half.Write("GET /healthz HTTP/1.1\r\n"));
  ASSERT_TRUE(idle.Fetch("GET", "/healthz"));
  StopServer();  // fails if the io_context keeps work
  EXPECT_TRUE(idle.WaitClosed(2s));
  EXPECT_TRUE(half.WaitClosed(2s));
  TestClient late;
  EXPECT_FALSE(late.Connect("127.0.0.1", server_->port(), 1s));
}

TEST_F(ServerTest, HandlerMayStopTheServer) {
  StartServer([this](const Request&) {
    server_->Stop();
    return TextResponse(200, "bye");
  });
  TestClient client = Connect();
  ASSERT_TRUE(client.Send("GET", "/quit"));
  EXPECT_TRUE(client.WaitClosed(3s));
  if (ran_out_.get_future().wait_for(5s) != std::future_status::ready) {
    ADD_FAILURE() << "io_context kept work";
    io_.stop();
  }
  thread_.join();
}

TEST(ServerStartTest, BindErrorNamesTheAddress) {
  boost::asio::io_context io;
  auto ok = [](const Request&) { return TextResponse(200, ""); };
  auto first = Server::Start(io, "127.0.0.1", 0, ok);
  ASSERT_TRUE(first) << first.error().ToString();
  uint16_t port = (*first)->port();
  EXPECT_EQ((*first)->address(), "127.0.0.1:" + std::to_string(port));
  auto second = Server::Start(io, "127.0.0.1", port, ok);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().where, "127.0.0.1:" + std::to_string(port));
  EXPECT_NE(second.error().message.find("HTTP bind: "), std::string::npos) << second.error().message;

  auto bad = Server::Start(io, "phalanx.example", 8080, ok);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().ToString(),
            "phalanx.example:8080: HTTP listen address is not an IP address (use e.g. "
            "127.0.0.1, ::1, 0.0.0.0 or localhost)");
  ServerOptions zero;
  zero.header_timeout = std::chrono::milliseconds(0);
  EXPECT_FALSE(Server::Start(io, "127.0.0.1", 0, ok, zero));
  EXPECT_FALSE(Server::Start(io, "127.0.0.1", 0, Handler()));
}

// Whether this machine can bind a TCP socket on [::1] at all, asked of the kernel directly, so
// that a broken IPv6 path in Server::Start is a failure and only a host without IPv6 skips.
bool KernelCanBindIpv6Loopback(std::string* why) {
  const int fd = socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0) {
    *why = std::string("socket(AF_INET6): ") + std::strerror(errno);
    return false;
  }
  sockaddr_in6 address{};
  address.sin6_family = AF_INET6;
  address.sin6_addr = in6addr_loopback;
  const bool ok = bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
  if (!ok) *why = std::string("bind [::1]:0: ") + std::strerror(errno);
  close(fd);
  return ok;
}

TEST(ServerStartTest, LocalhostAndIpv6Loopback) {
  boost::asio::io_context io;
  auto ok = [](const Request&) { return TextResponse(200, ""); };
  auto local = Server::Start(io, "localhost", 0, ok);
  ASSERT_TRUE(local) << local.error().ToString();
  EXPECT_TRUE((*local)->address().starts_with("127.0.0.1:"));
  std::string why;
  if (!KernelCanBindIpv6Loopback(&why)) GTEST_SKIP() << "no IPv6 loopback on this host: " << why;
  auto v6 = Server::Start(io, "[::1]", 0, ok);
  ASSERT_TRUE(v6) << "the kernel binds [::1] but the server does not: " << v6.error().ToString();
  EXPECT_TRUE((*v6)->address().starts_with("[::1]:"));
  EXPECT_NE((*v6)->port(), 0);
}

}  // namespace
}  // namespace phalanx::http
