// StepReportServer: phalanxd's sockets for the reports of Slurm compute nodes (docs/slurm.md,
// "Step reports"): step start and end from the SPANK plugin, "checkpoint done" from
// phalanx-ckpt-done, each as one MUNGE credential whose payload is a StepReport
// (step_report.h).
//
// Protocol, one report per connection: the client writes the credential (munge_encode's text)
// and '\n'; the server answers one line, "ok" or "refused: <why>", and closes. A connection that
// has not sent its line within 2 s, or sends more than 16 KiB, is closed without an answer;
// at most 64 connections are served at once (more are closed at once).
//
// It listens on a Unix socket (compute nodes on phalanxd's host), a TCP address (the others), or
// both. Identity is the credential's uid, as munged decoded it (a forged, damaged, expired or
// replayed credential is refused), never the peer: the socket file is mode 0666 so that every
// job can report, and over TCP anyone may connect. The Handler decides what the uid may do (the job's owner, root, the
// trusted users). Every refusal is logged through a RateLimitedLog (a few records per 10 s per reason and uid, then
// counted).
//
// MUNGE decoding and the password-database lookup run on one worker thread of their own, never
// on the io thread; everything else (accept, read, the handler, the answer) runs on the io thread.
// Thread-safety: construct, Start, Stop and destroy on the io thread (or before it runs).
#pragma once

#include <boost/asio/basic_socket_acceptor.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/common/result.h"
#include "service/caller.h"
#include "service/step_report.h"
#include "util/rate_limited_log.h"

namespace phalanx::service {

class StepReportServer {
 public:
  struct Options {
    std::string socket;        // the Unix socket to listen on (a stale file is replaced); "": none
    std::string listen;        // "ADDRESS:PORT" (numeric, [v6]:PORT; port 0: any) over TCP; "": none
    std::string munge_socket;  // munged's; empty: libmunge's default
    // Besides root: user names made admins of their reports (Slurm's SlurmUser).
    std::set<std::string> trusted_users;
  };
  // Called on the io thread with a decoded, parsed report and its sender (user from the
  // password database, "uid:N" without an entry; admin for root and the trusted users); answers
  // through `done` exactly once: OK -> "ok", an error -> "refused: <its message>" (logged).
  using Handler = std::function<void(const StepReport&, const Caller&, std::function<void(Status)> done)>;

  StepReportServer(boost::asio::io_context& io, Options options, Handler handler);
  ~StepReportServer();
  StepReportServer(const StepReportServer&) = delete;
  StepReportServer& operator=(const StepReportServer&) = delete;

  // Binds and listens. Fails naming the socket or address: a live server already there, a bad
  // address, bind/listen errors.
  Status Start();
  // The TCP port listened on (0: none); after Start.
  int tcp_port() const { return tcp_port_; }
  // Stops accepting and closes the open connections; idempotent.
  void Stop();

  // Reports answered "ok" / refused so far (tests, metrics).
  uint64_t accepted() const { return accepted_; }
  uint64_t refused() const { return refused_; }

 private:
  using Acceptor = boost::asio::basic_socket_acceptor<boost::asio::generic::stream_protocol>;
  struct Session;
  Status Listen(const boost::asio::generic::stream_protocol::endpoint& ep, const std::string& where);
  void Accept(Acceptor* acceptor);
  void Read(std::shared_ptr<Session> s);
  void Decoded(std::shared_ptr<Session> s, Result<StepReport> report, Caller who);
  void Answer(std::shared_ptr<Session> s, const Status& st, const Caller& who);

  boost::asio::io_context& io_;
  const Options options_;
  Handler handler_;
  std::vector<std::unique_ptr<Acceptor>> acceptors_;
  bool unix_bound_ = false;  // the socket file is ours to remove
  int tcp_port_ = 0;
  boost::asio::thread_pool worker_{1};
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::set<std::shared_ptr<Session>> sessions_;
  RateLimitedLog refusals_;
  uint64_t accepted_ = 0, refused_ = 0;
};

}  // namespace phalanx::service
