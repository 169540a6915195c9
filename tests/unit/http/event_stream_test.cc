// Server-Sent Events from phalanx::http::Server (Response::stream) over real sockets: the
// header and the event framing, other requests served while streams are open, the max_streams
// bound (503), a reader that closes or falls behind, keep-alive comments, and Stop().
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <boost/asio/post.hpp>

#include "service/http/responses.h"
#include "service/http/router.h"
#include "service/http/server.h"
#include "test_client.h"

namespace phalanx::http {
namespace {

using namespace std::chrono_literals;

// A raw client: the stream never ends, so it is read up to a marker, under a deadline.
class RawClient {
 public:
  explicit RawClient(uint16_t port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~RawClient() { CloseNow(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }
  void Get(const std::string& target) {
    const std::string req = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n";
    ASSERT_EQ(write(fd_, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  }
  // Reads until `marker` is in what was read (true) or `timeout` passes or the peer closes.
  bool ReadUntil(const std::string& marker, std::chrono::milliseconds timeout = 5s) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (text_.find(marker) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !ReadSome(static_cast<int>(left.count()))) return false;
    }
    return true;
  }
  // True when the server closes the connection within `timeout`.
  bool ReadUntilClosed(std::chrono::milliseconds timeout = 5s) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (!eof_) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      ReadSome(static_cast<int>(left.count()));
    }
    return true;
  }
  void CloseNow() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  const std::string& text() const { return text_; }

 private:
  bool ReadSome(int timeout_ms) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return false;
    char buf[65536];
    const ssize_t n = read(fd_, buf, sizeof buf);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    text_.append(buf, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  std::string text_;
};

class EventStreamTest : public ::testing::Test {
 protected:
  void Start(ServerOptions options = {}) {
    Router router;
    ASSERT_TRUE(router.Get("/healthz", [](const Request&, const PathParams&) { return TextResponse(200, "ok\n"); }));
    ASSERT_TRUE(router.Get("/events", [this](const Request&, const PathParams&) {
      Response r;
      r.headers.emplace_back("X-Stream", "yes");
      r.stream = [this](std::shared_ptr<EventStream> s) { streams_.push_back(std::move(s)); };
      return r;
    }));
    auto server = Server::Start(io_, "127.0.0.1", 0, std::move(router).ToHandler(), options);
    ASSERT_TRUE(server) << server.error().ToString();
    server_ = std::move(*server);
    thread_ = std::thread([this] {
      io_.run();
      ran_out_.set_value();
    });
  }
  // Runs `f` on the io thread and waits for its result.
  template <typename F>
  auto OnIo(F f) {
    std::packaged_task<decltype(f())()> task(std::move(f));
    auto result = task.get_future();
    boost::asio::post(io_, [&task] { task(); });
    EXPECT_EQ(result.wait_for(5s), std::future_status::ready);
    return result.get();
  }
  // Waits until the server has `n` streams open.
  bool WaitStreams(size_t n) {
    for (int i = 0; i < 500; ++i) {
      if (OnIo([this, n] { return server_->stats().streams == n && streams_.size() >= n; })) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
  void TearDown() override {
    if (!thread_.joinable()) return;
    boost::asio::post(io_, [this] { server_->Stop(); });
    if (ran_out_.get_future().wait_for(10s) != std::future_status::ready) {
      ADD_FAILURE() << "io_context still has work 10 s after Stop()";
      io_.stop();
    }
    thread_.join();
    streams_.clear();
  }

  boost::asio::io_context io_;
  std::unique_ptr<Server> server_;
  std::vector<std::shared_ptr<EventStream>> streams_;  // io thread
  std::thread thread_;
  std::promise<void> ran_out_;
};

TEST_F(EventStreamTest, HeaderThenEventsInOrder) {
  Start();
  RawClient c(server_->port());
  ASSERT_TRUE(c.connected());
  c.Get("/events");
  ASSERT_TRUE(c.ReadUntil("retry: 2000\n\n"));
  ASSERT_TRUE(WaitStreams(1));
  const std::string& t = c.text();
  EXPECT_TRUE(t.starts_with("HTTP/1.1 200 OK\r\n")) << t;
  EXPECT_NE(t.find("Content-Type: text/event-stream\r\n"), std::string::npos) << t;
  EXPECT_NE(t.find("Cache-Control: no-store\r\n"), std::string::npos) << t;
  EXPECT_NE(t.find("X-Stream: yes\r\n"), std::string::npos) << t;
  EXPECT_EQ(t.find("Content-Length"), std::string::npos) << t;
  EXPECT_TRUE(OnIo([this] { return streams_[0]->Send("job", "{\"a\":1}\nsecond\r line"); }));
  EXPECT_TRUE(OnIo([this] { return streams_[0]->Send("", "plain"); }));
  ASSERT_TRUE(c.ReadUntil("data: plain\n\n"));
  const std::string body = c.text().substr(c.text().find("\r\n\r\n") + 4);
  EXPECT_EQ(body, "retry: 2000\n\nevent: job\ndata: {\"a\":1}\ndata: second line\n\ndata: plain\n\n");
}

TEST_F(EventStreamTest, OtherRequestsAreServedWhileStreamsAreOpen) {
  Start();
  std::vector<std::unique_ptr<RawClient>> open;
  for (int i = 0; i < 8; ++i) {
    open.push_back(std::make_unique<RawClient>(server_->port()));
    open.back()->Get("/events");
  }
  ASSERT_TRUE(WaitStreams(8));
  auto r = testing::HttpGet("127.0.0.1", server_->port(), "/healthz");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->body(), "ok\n");
  EXPECT_EQ(OnIo([this] { return server_->stats().streams; }), 8u);
}

TEST_F(EventStreamTest, PastMaxStreamsIs503UntilOneCloses) {
  ServerOptions o;
  o.max_streams = 2;
  Start(o);
  // One after the other, so that streams_[0] is a's: both at once, the server may take b's
  // request first, and a's close then never shows on streams_[0] (the likely cause of a TSan
  // failure of this test in a clean-clone CI run: `freed` false after 3 s).
  RawClient a(server_->port());
  a.Get("/events");
  ASSERT_TRUE(WaitStreams(1));
  RawClient b(server_->port());
  b.Get("/events");
  ASSERT_TRUE(WaitStreams(2));
  RawClient c(server_->port());
  c.Get("/events");
  ASSERT_TRUE(c.ReadUntil("max_streams 2"));
  EXPECT_TRUE(c.text().starts_with("HTTP/1.1 503")) << c.text();
  EXPECT_EQ(OnIo([this] { return server_->stats().streams_refused; }), 1u);
  a.CloseNow();  // the server notices (its read of the client's side ends) and frees the slot
  bool freed = false;
  for (int i = 0; i < 300 && !freed; ++i) {
    freed = OnIo([this] { return server_->stats().streams == 1 && streams_[0]->closed(); });
    if (!freed) std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(freed);
  EXPECT_FALSE(OnIo([this] { return streams_[0]->Send("job", "x"); }));
  RawClient d(server_->port());
  d.Get("/events");
  EXPECT_TRUE(d.ReadUntil("retry: 2000"));
  EXPECT_TRUE(d.text().starts_with("HTTP/1.1 200")) << d.text();
}

TEST_F(EventStreamTest, AReaderThatFallsBehindIsClosed) {
  ServerOptions o;
  o.max_stream_queue_bytes = 64 * 1024;
  Start(o);
  RawClient c(server_->port());
  c.Get("/events");
  ASSERT_TRUE(c.ReadUntil("retry: 2000"));
  ASSERT_TRUE(WaitStreams(1));
  // The client reads nothing more: once the kernel's buffers are full the queue grows past
  // its bound, and the stream is closed.
  const std::string chunk(16 * 1024, 'x');
  const int sent = OnIo([&] {
    int n = 0;
    while (n < 10000 && streams_[0]->Send("bulk", chunk)) ++n;
    return n;
  });
  EXPECT_LT(sent, 10000);
  EXPECT_TRUE(OnIo([this] { return streams_[0]->closed(); }));
  EXPECT_EQ(OnIo([this] { return server_->stats().streams; }), 0u);
}

TEST_F(EventStreamTest, KeepAliveCommentsAndStopClosesStreams) {
  ServerOptions o;
  o.stream_keepalive = 50ms;
  Start(o);
  RawClient c(server_->port());
  c.Get("/events");
  EXPECT_TRUE(c.ReadUntil(": keep-alive\n\n: keep-alive\n\n", 3s)) << c.text();
  boost::asio::post(io_, [this] { server_->Stop(); });
  EXPECT_TRUE(c.ReadUntilClosed(3s));
  // The io_context runs out of work once the stream's operations end (nothing may run on it
  // after that): wait for it, then look at the stream from here.
  if (ran_out_.get_future().wait_for(10s) != std::future_status::ready) {
    ADD_FAILURE() << "io_context still has work 10 s after Stop()";
    io_.stop();
  }
  thread_.join();
  ASSERT_EQ(streams_.size(), 1u);
  EXPECT_TRUE(streams_[0]->closed());
  EXPECT_FALSE(streams_[0]->Send("job", "late"));
}

TEST_F(EventStreamTest, HeadGetsTheHeaderOnly) {
  Start();
  testing::TestClient client;
  ASSERT_TRUE(client.Connect("127.0.0.1", server_->port()));
  ASSERT_TRUE(client.Send("HEAD", "/events"));
  auto r = client.Read(/*head=*/true);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->result_int(), 200);
  EXPECT_EQ((*r)[boost::beast::http::field::content_type], "text/event-stream");
  EXPECT_EQ(OnIo([this] { return streams_.size(); }), 0u);
  auto again = client.Fetch("GET", "/healthz");  // the connection goes on
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(again->body(), "ok\n");
}

}  // namespace
}  // namespace phalanx::http
