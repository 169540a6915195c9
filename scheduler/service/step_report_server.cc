#include "service/step_report_server.h"

#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>

#include <cerrno>
#include <cstring>

#include "call_auth.h"
#include "util/log.h"
#include "util/numbers.h"

namespace phalanx::service {
namespace {

constexpr size_t kMaxLine = 16 * 1024;
constexpr size_t kMaxSessions = 64;
constexpr auto kReadTimeout = std::chrono::seconds(2);

std::string UserOf(uint32_t uid) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr) return pw.pw_name;
  return "uid:" + std::to_string(uid);
}

// True when something accepts connections at `path` (a live server, not a stale file).
bool Live(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
  const bool live = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  close(fd);
  return live;
}

}  // namespace

struct StepReportServer::Session {
  explicit Session(boost::asio::io_context& io) : socket(io), timer(io), buf(kMaxLine) {}
  boost::asio::generic::stream_protocol::socket socket;
  boost::asio::steady_timer timer;
  boost::asio::streambuf buf;
  std::string answer;
};

StepReportServer::StepReportServer(boost::asio::io_context& io, Options options, Handler handler)
    : io_(io), options_(std::move(options)), handler_(std::move(handler)) {}

StepReportServer::~StepReportServer() {
  Stop();
  worker_.join();  // a decode in flight posts to io_, which outlives this; its handler sees !alive
}

Status StepReportServer::Listen(const boost::asio::generic::stream_protocol::endpoint& ep, const std::string& where) {
  auto a = std::make_unique<Acceptor>(io_);
  boost::system::error_code ec;
  a->open(ep.protocol(), ec);
  if (!ec && ep.protocol().family() != AF_UNIX) a->set_option(boost::asio::socket_base::reuse_address(true), ec);
  if (!ec) a->bind(ep, ec);
  if (!ec) a->listen(128, ec);
  if (ec) return Fail(where, ec.message());
  acceptors_.push_back(std::move(a));
  return {};
}

Status StepReportServer::Start() {
  if (!options_.socket.empty()) {
    const std::string& path = options_.socket;
    const std::string where = "slurm.report_socket " + path;
    struct stat st {};
    if (lstat(path.c_str(), &st) == 0) {
      if (!S_ISSOCK(st.st_mode)) return Fail(where, "exists and is not a socket");
      if (Live(path)) return Fail(where, "another server already listens there");
      unlink(path.c_str());
    }
    PHX_RETURN_IF_ERROR(Listen(boost::asio::local::stream_protocol::endpoint(path), where));
    unix_bound_ = true;
    // Every job reports, as its own user: identity comes from the MUNGE credential, not the peer.
    if (chmod(path.c_str(), 0666) != 0) return Fail(where, std::string("chmod: ") + std::strerror(errno));
    PHX_LOG(kInfo) << "step reports (MUNGE) on " << path;
  }
  if (!options_.listen.empty()) {
    const std::string& l = options_.listen;
    const std::string where = "slurm.report_listen " + l;
    const size_t colon = l.rfind(':');
    if (colon == std::string::npos) return Fail(where, "not ADDRESS:PORT");
    std::string host = l.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    auto port = ParseNumber<uint16_t>(std::string_view(l).substr(colon + 1));
    boost::system::error_code ec;
    const auto addr = boost::asio::ip::make_address(host, ec);
    if (ec || !port) return Fail(where, "not ADDRESS:PORT with a numeric address (0.0.0.0:6820, [::]:6820)");
    PHX_RETURN_IF_ERROR(Listen(boost::asio::ip::tcp::endpoint(addr, *port), where));
    boost::asio::ip::tcp::endpoint bound;
    bound.resize(acceptors_.back()->local_endpoint().size());
    std::memcpy(bound.data(), acceptors_.back()->local_endpoint().data(), bound.size());
    tcp_port_ = bound.port();
    PHX_LOG(kInfo) << "step reports (MUNGE) on TCP " << host << ":" << tcp_port_;
  }
  for (const auto& a : acceptors_) Accept(a.get());
  return {};
}

void StepReportServer::Stop() {
  if (!*alive_) return;
  *alive_ = false;
  boost::system::error_code ec;
  for (const auto& a : acceptors_) a->close(ec);
  if (unix_bound_) unlink(options_.socket.c_str());
  unix_bound_ = false;
  for (const auto& s : sessions_) {
    s->timer.cancel();
    s->socket.close(ec);
  }
  sessions_.clear();
}

void StepReportServer::Accept(Acceptor* acceptor) {
  auto s = std::make_shared<Session>(io_);
  acceptor->async_accept(s->socket, [this, s, acceptor, alive = alive_](const boost::system::error_code& ec) {
    if (!*alive) return;
    if (ec) {
      refusals_.Log(LogLevel::kWarn, "accept", "step reports: accept: " + ec.message());
      // Out of descriptors and the like: try again shortly instead of spinning.
      auto t = std::make_shared<boost::asio::steady_timer>(io_, std::chrono::milliseconds(100));
      t->async_wait([this, t, acceptor, alive](const boost::system::error_code&) {
        if (*alive) Accept(acceptor);
      });
      return;
    }
    if (sessions_.size() >= kMaxSessions) {
      refusals_.Log(LogLevel::kWarn, "busy",
                    "step reports: " + std::to_string(kMaxSessions) + " connections open, one more closed");
      boost::system::error_code ignored;
      s->socket.close(ignored);
    } else {
      sessions_.insert(s);
      Read(s);
    }
    Accept(acceptor);
  });
}

void StepReportServer::Read(std::shared_ptr<Session> s) {
  s->timer.expires_after(kReadTimeout);
  s->timer.async_wait([s](const boost::system::error_code& ec) {
    if (ec) return;  // cancelled: the line came
    boost::system::error_code ignored;
    s->socket.close(ignored);
  });
  boost::asio::async_read_until(s->socket, s->buf, '\n',
                                [this, s, alive = alive_](const boost::system::error_code& ec, size_t n) {
    if (!*alive) return;
    s->timer.cancel();
    if (ec) {  // closed early, too long, or timed out: no answer
      sessions_.erase(s);
      return;
    }
    std::string line(boost::asio::buffers_begin(s->buf.data()), boost::asio::buffers_begin(s->buf.data()) + n - 1);
    // munged's round trip and the password database stay off the io thread.
    boost::asio::post(worker_, [this, s, alive, line = std::move(line)] {
      Result<StepReport> report = Fail("report", "not decoded");
      Caller who;
      who.user = "(no valid credential)";
      auto id = auth::MungeDecode(options_.munge_socket, line);
      if (!id) {
        report =
            Fail("MUNGE credential", std::string(auth::MungeFailureName(id.error().kind)) + ": " + id.error().message);
      } else {
        who.uid = id->uid;
        who.gid = id->gid;
        who.user = UserOf(id->uid);
        who.admin = id->uid == 0 || options_.trusted_users.contains(who.user);
        report = ParseStepReport(id->payload);
      }
      boost::asio::post(io_, [this, s, alive, report = std::move(report), who = std::move(who)]() mutable {
        if (*alive) Decoded(s, std::move(report), std::move(who));
      });
    });
  });
}

void StepReportServer::Decoded(std::shared_ptr<Session> s, Result<StepReport> report, Caller who) {
  if (!report) return Answer(s, std::unexpected(report.error()), who);
  handler_(*report, who, [this, s, who, alive = alive_](Status st) {
    if (*alive) Answer(s, st, who);
  });
}

void StepReportServer::Answer(std::shared_ptr<Session> s, const Status& st, const Caller& who) {
  if (st) {
    ++accepted_;
    s->answer = "ok\n";
  } else {
    ++refused_;
    const std::string why = st.error().ToString();
    refusals_.Log(LogLevel::kWarn, std::to_string(static_cast<int>(st.error().code)) + ":" + who.user,
                  "step report from " + who.user + " refused: " + why);
    s->answer = "refused: " + why + "\n";
  }
  boost::asio::async_write(s->socket, boost::asio::buffer(s->answer),
                           [this, s, alive = alive_](const boost::system::error_code&, size_t) {
    if (!*alive) return;
    boost::system::error_code ignored;
    s->socket.close(ignored);
    sessions_.erase(s);
  });
}

}  // namespace phalanx::service
