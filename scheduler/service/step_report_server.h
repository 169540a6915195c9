// StepReportServer: phalanxd's socket for the reports of Slurm compute nodes (docs/slurm.md,
// "Step reports"): step start and end from the SPANK plugin, "checkpoint done" from
// phalanx-ckpt-done, each as one MUNGE credential whose payload is a StepReport
// (step_report.h).
//
// Protocol, one report per connection: the client writes the credential (munge_encode's text)
// and '\n'; the server answers one line, "ok" or "refused: <why>", and closes. A connection that
// has not sent its line within 2 s, or sends more than 16 KiB, is closed without an answer;
// at most 64 connections are served at once (more are closed at once).
//
// Identity is the credential's uid, as munged decoded it (a forged, damaged, expired or replayed
// credential is refused), never the socket peer: the socket file is mode 0666 so that every
// job can report. The Handler decides what the uid may do (the job's owner, root, the trusted
// users). Every refusal is logged through a RateLimitedLog (a few records per 10 s per reason
// and uid, then counted).
//
// MUNGE decoding and the password-database lookup run on one worker thread of their own, never
// on the io thread; everything else (accept, read, the handler, the answer) runs on the io thread.
// Thread-safety: construct, Start, Stop and destroy on the io thread (or before it runs).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/thread_pool.hpp>

#include <functional>
#include <memory>
#include <set>
#include <string>

#include "core/common/result.h"
#include "service/caller.h"
#include "service/step_report.h"
#include "util/rate_limited_log.h"

namespace phalanx::service {

class StepReportServer {
 public:
  struct Options {
    std::string socket;        // the Unix socket to listen on (a stale file is replaced)
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

  // Binds and listens. Fails naming the socket: a live server already there, bind/listen errors.
  Status Start();
  // Stops accepting and closes the open connections; idempotent.
  void Stop();

  // Reports answered "ok" / refused so far (tests, metrics).
  uint64_t accepted() const { return accepted_; }
  uint64_t refused() const { return refused_; }

 private:
  struct Session;
  void Accept();
  void Read(std::shared_ptr<Session> s);
  void Decoded(std::shared_ptr<Session> s, Result<StepReport> report, Caller who);
  void Answer(std::shared_ptr<Session> s, const Status& st, const Caller& who);

  boost::asio::io_context& io_;
  const Options options_;
  Handler handler_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  boost::asio::thread_pool worker_{1};
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::set<std::shared_ptr<Session>> sessions_;
  RateLimitedLog refusals_;
  uint64_t accepted_ = 0, refused_ = 0;
};

}  // namespace phalanx::service
