#include "service/daemon.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/server_posix.h>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <sstream>
#include <thread>

#include "adapters/store/group_committer.h"
#include "adapters/topology/topology_loader.h"
#include "service/agent_executor.h"
#include "service/agents_service.h"
#include "service/cluster_service.h"
#include "service/controller.h"
#include "service/daemon_standby.h"
#include "service/history_sampler.h"
#include "service/identity.h"
#include "service/jobs_service.h"
#include "service/recovery.h"
#include "service/slurm_executor.h"
#include "service/step_report_server.h"
#include "service/unix_listener.h"
#include "util/file_read.h"
#include "util/log.h"
#include "util/strings.h"
#ifdef PHALANX_HAVE_HTTP
#include "service/http_endpoints.h"
#endif

namespace phalanx::service {
namespace {

// A token is a line; 64 KiB is far more than any, and keeps /dev/zero from growing without limit.
constexpr size_t kMaxSecretBytes = size_t{64} << 10;

Result<std::string> ReadSecretFile(const std::string& path, std::string_view what) {
  auto text = ReadFileBounded(path, kMaxSecretBytes);
  if (!text) return Fail(path, "cannot read the " + std::string(what) + ": " + text.error().message);
  return *text;
}

Result<Topology> LoadClusterTopology(const DaemonConfig& c) {
  LoadOptions options;
  if (c.mode == "slurm") {  // Slurm's own files: topology.conf, GPUs from gres.conf / slurm.conf
    options.format = TopologyFormat::kSlurm;
    options.gres_path = c.slurm.gres;
    PHX_ASSIGN_OR_RETURN(auto spec, LoadTopologyFile(c.slurm.topology, options));
    return Topology::Build(spec);
  }
  if (!ParseTopologyFormat(c.topology_format, &options.format))
    return Fail("topology.format", "unknown format '" + c.topology_format + "' (auto, yaml, slurm, nvsmi, hwloc, gen)");
  PHX_ASSIGN_OR_RETURN(auto spec, LoadTopologyFile(c.topology, options));
  return Topology::Build(spec);
}

// mkdir -p for the store's directory (0750 for what we create).
Status MakeParentDirs(const std::string& file) {
  const size_t slash = file.rfind('/');
  if (slash == std::string::npos || slash == 0) return {};
  const std::string dir = file.substr(0, slash);
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    const std::string part = dir.substr(0, pos);
    if (mkdir(part.c_str(), 0750) != 0 && errno != EEXIST)
      return Fail(part, std::string("cannot create: ") + std::strerror(errno));
  }
  return {};
}

// Raises the soft RLIMIT_NOFILE to the hard one (every connection is a descriptor) and caps
// user_limits.max_connections below it, leaving room for the store, agents, HTTP and gRPC.
void FitFileLimit(UserLimits& limits) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  if (rl.rlim_cur < rl.rlim_max) {
    const rlim_t old = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) == 0) {
      PHX_LOG(kInfo) << "open files limit raised from " << old << " to " << rl.rlim_cur;
    } else {
      getrlimit(RLIMIT_NOFILE, &rl);
    }
  }
  constexpr rlim_t kReserve = 256;
  const rlim_t room = rl.rlim_cur > 2 * kReserve ? rl.rlim_cur - kReserve : rl.rlim_cur / 2;
  if (rl.rlim_cur != RLIM_INFINITY && (limits.max_connections == 0 || limits.max_connections > room)) {
    PHX_LOG(kInfo) << "user_limits.max_connections " << limits.max_connections << " lowered to " << room
                   << " (open files limit " << rl.rlim_cur << ")";
    limits.max_connections = static_cast<uint32_t>(room);
  }
}

// The compute nodes' reports in Slurm mode (docs/slurm.md, "Step reports"): the sender must be
// the job's owner, root or a trusted user (Controller::CheckOwner); a checkpoint goes to the
// core as the owner's ReportCheckpoint (a preemption waiting for it goes on at once).
StepReportServer::Handler SlurmReportHandler(Controller* c, SlurmExecutor* slurm) {
  return [c, slurm](const StepReport& r, const Caller& who, std::function<void(Status)> done) {
    const std::string sjob = "Slurm job " + std::to_string(r.slurm_job);
    const JobId id = slurm->core_job(r.slurm_job);
    if (id == kNoJob) return done(Fail(ErrorCode::kNotFound, sjob, "not a job Phalanx manages"));
    auto found = c->FindJob(id);
    if (!found) return done(std::unexpected(found.error()));
    if (r.kind == StepReport::Kind::kCheckpoint) {
      c->ReportCheckpoint(who, id, r.epoch, r.path, [done, sjob, id, who, node = r.node](CallStatus st) {
        if (!st) {
          if (st.error().unavailable) return done(Fail(ErrorCode::kInternal, "phalanxd", st.error().error.message));
          return done(std::unexpected(st.error().error));
        }
        PHX_LOG(kInfo) << sjob << " (job " << id << ") checkpoint done, reported by " << who.user
                       << (node.empty() ? "" : " on " + node);
        done({});
      });
      return;
    }
    if (auto st = c->CheckOwner(who, **found, "report a step of"); !st) return done(st);
    PHX_LOG(kInfo) << sjob << " (job " << id << ") step " << (r.step.empty() ? "?" : r.step) << " "
                   << (r.kind == StepReport::Kind::kStart ? "started" : "ended")
                   << (r.node.empty() ? "" : " on " + r.node) << " (reported by " << who.user << ")";
    // The batch step's end is the job's: watch Slurm for it and take it at once (GPUs freed in
    // the core, a pass) instead of at the next poll.
    if (r.kind == StepReport::Kind::kEnd && (r.step == "batch" || r.step.empty())) slurm->JobEnding(r.slurm_job);
    done({});
  };
}

// users_tcp's server credentials: TLS when a certificate is configured, else plaintext.
Result<std::shared_ptr<grpc::ServerCredentials>> UsersTcpCredentials(const UserTcpConfig& u) {
  if (u.tls_cert.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions ssl;
  PHX_ASSIGN_OR_RETURN(auto cert, ReadSecretFile(u.tls_cert, "TLS certificate"));
  PHX_ASSIGN_OR_RETURN(auto key, ReadSecretFile(u.tls_key, "TLS key"));
  ssl.pem_key_cert_pairs.push_back({key, cert});
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

// Everything the daemon owns, declared in construction order (destroyed in reverse).
struct Daemon::Parts {
  SystemClock system_clock;
  const Clock* clock = nullptr;
  int lock_fd = -1;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<store::Store> reader;
  std::unique_ptr<store::GroupCommitter> committer;
  boost::asio::io_context io;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work;
  std::unique_ptr<AgentExecutor> executor;     // outlives the Controller, which reports through it
  std::unique_ptr<slurm::SlurmAdapter> slurm;  // mode: slurm, instead of the agents
  std::unique_ptr<SlurmExecutor> slurm_executor;
  std::unique_ptr<StoreSpace> space;  // the free-space reserve (store.min_free); null when 0
  std::unique_ptr<Controller> controller;
  std::unique_ptr<StepReportServer> step_reports;          // mode: slurm with slurm.report_socket
  std::unique_ptr<HistorySampler> history;                 // used and stopped on the io thread
  std::unique_ptr<boost::asio::steady_timer> lease_timer;  // PostgreSQL: renews the leadership lease
  std::function<void()> renew_lease;                       // arms lease_timer; on the io thread
  PeerRegistry peers;
  std::unique_ptr<UidRateLimiter> rate;
  std::unique_ptr<CallAuthenticator> user_auth;  // users_tcp: MUNGE credentials (outlives identity)
  std::unique_ptr<Identity> identity;
  std::unique_ptr<JobsService> jobs;
  std::unique_ptr<ClusterService> cluster;
  std::unique_ptr<AgentsService> agents;
  std::unique_ptr<JobsService> jobs_tcp;        // the same services for users over TCP (a service
  std::unique_ptr<ClusterService> cluster_tcp;  // object serves one gRPC server)
  std::unique_ptr<grpc::Server> user_server;
  std::unique_ptr<grpc::Server> agent_server;
  std::unique_ptr<grpc::Server> user_tcp_server;
  std::unique_ptr<UnixListener> listener;
  std::unique_ptr<boost::asio::signal_set> signals;
#ifdef PHALANX_HAVE_HTTP
  std::unique_ptr<HttpEndpoints> http;  // used and stopped on the io thread
#endif
  std::thread io_thread;

  ~Parts() {
    if (lock_fd >= 0) close(lock_fd);
  }
};

Daemon::Daemon(DaemonConfig config) : config_(std::move(config)), parts_(std::make_unique<Parts>()) {}

Daemon::~Daemon() { Stop(); }

Result<std::unique_ptr<Daemon>> Daemon::Start(const DaemonConfig& config, Options options) {
  PHX_RETURN_IF_ERROR(ValidateDaemonConfig(config));
  SetLogLevel(config.log_level);
  std::unique_ptr<Daemon> d(new Daemon(config));
  Parts& p = *d->parts_;
  p.clock = options.clock ? options.clock : &p.system_clock;

  PHX_ASSIGN_OR_RETURN(auto topology, LoadClusterTopology(config));
  const std::string fingerprint = TopologyFingerprint(topology);

  // One daemon per store: a lock file beside a SQLite file; on PostgreSQL the store's
  // leadership lease (docs/store.md, "Leadership").
  const bool postgres = config.store_backend == store::Backend::kPostgres;
  const std::string store_target = postgres ? config.store_dsn : config.db_path;
  if (!postgres) {
    PHX_RETURN_IF_ERROR(MakeParentDirs(config.db_path));
    const std::string lock_path = config.db_path + ".lock";
    p.lock_fd = open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    if (p.lock_fd < 0) return Fail(lock_path, std::string("cannot open the lock file: ") + std::strerror(errno));
    if (flock(p.lock_fd, LOCK_EX | LOCK_NB) != 0)
      return Fail(config.db_path, "another phalanxd uses this store (" + lock_path + " is locked)");
  }

  store::StoreOptions so;
  so.sync = config.sync;
  so.backend = config.store_backend;
  PHX_ASSIGN_OR_RETURN(auto opened, store::Store::Open(store_target, so));
  p.store = std::move(opened);
  // Agents' credentials, before anything listens.
  std::shared_ptr<grpc::ServerCredentials> agent_creds;
  std::string token;
  if (!config.agents.listen.empty()) {
    if (!config.agents.token_file.empty()) {
      PHX_ASSIGN_OR_RETURN(auto t, ReadSecretFile(config.agents.token_file, "agent token file"));
      token = t;
      while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
      if (token.empty()) return Fail(config.agents.token_file, "the agent token file is empty");
    }
    if (!config.agents.tls_cert.empty()) {
      grpc::SslServerCredentialsOptions ssl;
      PHX_ASSIGN_OR_RETURN(auto cert, ReadSecretFile(config.agents.tls_cert, "TLS certificate"));
      PHX_ASSIGN_OR_RETURN(auto key, ReadSecretFile(config.agents.tls_key, "TLS key"));
      ssl.pem_key_cert_pairs.push_back({key, cert});
      if (!config.agents.tls_client_ca.empty()) {
        PHX_ASSIGN_OR_RETURN(auto ca, ReadSecretFile(config.agents.tls_client_ca, "TLS client CA"));
        ssl.pem_root_certs = ca;
        ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
      }
      agent_creds = grpc::SslServerCredentials(ssl);
    } else {
      agent_creds = grpc::InsecureServerCredentials();
    }
  }

  // users_tcp's credentials (TLS files read once): a standby's refusals and the leader's listener.
  std::shared_ptr<grpc::ServerCredentials> users_tcp_creds;
  if (!config.users_tcp.listen.empty()) {
    PHX_ASSIGN_OR_RETURN(users_tcp_creds, UsersTcpCredentials(config.users_tcp));
  }
  const auto lease_ms = static_cast<int64_t>(config.store_lease_s * 1000);
  const auto renew_ms = static_cast<int64_t>(config.store_lease_renew_s * 1000);
  if (postgres) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    const std::string holder = std::string(host) + ":" + std::to_string(getpid());
    PHX_ASSIGN_OR_RETURN(auto lease,
                         LeadOrStandBy(*p.store, holder, config, agent_creds, users_tcp_creds, options.handle_signals));
    PHX_LOG(kInfo) << "store " << p.store->path() << ": leading as " << holder << ", epoch " << lease.epoch
                   << " (lease " << config.store_lease_s << " s, renewed every " << config.store_lease_renew_s << " s)";
  }

  RecoveryOptions ro;
  ro.force_topology = config.force_topology;
  ro.now = p.clock->Now();
  SchedulerConfig core_config = config.scheduler;
  core_config.wait_decisions = false;  // the controller reads wait reasons from the job records
  // Slurm shrinks a running job in place only when it keeps its batch host (docs/slurm.md).
  if (config.mode == "slurm") core_config.shrink_keeps_first_node = true;
  PHX_ASSIGN_OR_RETURN(auto recovered, Recover(*p.store, std::move(topology), std::move(core_config), ro));
  for (const std::string& note : recovered.notes) PHX_LOG(kWarn) << "recovery: " << note;
  PHX_LOG(kInfo) << "recovered " << recovered.jobs << " jobs from " << p.store->path() << " (" << recovered.unfinished
                 << " unfinished, " << recovered.running << " running; " << recovered.unconfirmed.size()
                 << " nodes wait for their agents)";
  PHX_RETURN_IF_ERROR(p.store->Apply(recovered.batch));
  recovered.batch.Clear();

  PHX_ASSIGN_OR_RETURN(auto reader, store::Store::Open(store_target, so));
  p.reader = std::move(reader);

  p.committer = std::make_unique<store::GroupCommitter>(p.store.get());
  p.work.emplace(p.io.get_executor());
  AgentExecutor::Options eo;
  eo.ports = PortRange{config.master_port_min, config.master_port_max};
  eo.kill_grace_s = config.kill_grace_s;
  eo.sessions.heartbeat_interval_s = config.heartbeat_interval_s;
  eo.sessions.heartbeat_timeout_s = config.heartbeat_timeout_s;
  eo.sessions.agent_grace_s = config.agent_grace_s;
  eo.sessions.startup_grace_s = config.startup_grace_s;
  eo.sessions.fence_after_s = FenceAfterSeconds(config);
  if (config.mode != "slurm") {
    if (eo.sessions.fence_after_s > 0) {
      PHX_LOG(kInfo) << "agents fence after " << eo.sessions.fence_after_s << " s without contact ("
                     << FenceFormula(config) << ")";
    } else if (!config.fence.has_value()) {
      PHX_LOG(kWarn) << "agents: no fencing (" << FenceFormula(config)
                     << "): a node cut off from phalanxd may run a job also started elsewhere";
    }
  }
  Executor* executor = nullptr;
  if (config.mode == "slurm") {
    PHX_ASSIGN_OR_RETURN(p.slurm, slurm::OpenLibslurm(config.slurm.conf));
    SlurmModeOptions so;
    so.poll_interval_s = config.slurm.poll_interval_s;
    so.fallback_delay_s = config.slurm.fallback_delay_s;
    so.start_timeout_s = config.slurm.start_timeout_s;
    so.rule.partitions = {config.slurm.partitions.begin(), config.slurm.partitions.end()};
    so.rule.qos = {config.slurm.qos.begin(), config.slurm.qos.end()};
    so.comments = config.slurm.comments;
    p.slurm_executor = std::make_unique<SlurmExecutor>(p.io, p.slurm.get(), recovered.core->topology(), so);
    executor = p.slurm_executor.get();
  } else {
    p.executor = std::make_unique<AgentExecutor>(p.io, recovered.core->topology(), recovered.unconfirmed, eo);
    executor = p.executor.get();
  }
  ControllerOptions co;
  co.pass_interval_s = config.pass_interval_s;
  co.topology_fingerprint = fingerprint;
  co.private_data = config.private_data;
  if (config.store_min_free > 0 && !postgres) {  // PostgreSQL's disk is the server's
    StoreSpace::Options so;
    so.dir = std::filesystem::path(config.db_path).parent_path().string();
    if (so.dir.empty()) so.dir = ".";
    so.min_free = config.store_min_free;
    so.cache_s = options.store_space_cache_s;
    p.space = std::make_unique<StoreSpace>(so, options.store_free_bytes);
    co.store_space = p.space.get();
    if (auto st = p.space->CheckUserWrite(); !st) PHX_LOG(kWarn) << st.error().message;
  }
  {
    std::vector<std::string> classes;
    for (const PriorityClassSpec& cls : config.scheduler.classes.classes) classes.push_back(cls.name);
    PHX_ASSIGN_OR_RETURN(co.access, AccessRules::Build(config.access, classes));
    co.partitions = config.partitions;
  }
  Daemon* self = d.get();
  p.controller = std::make_unique<Controller>(p.io, std::move(recovered), p.committer.get(), p.reader.get(), p.clock,
                                              co, executor, [self](const std::string& why) { self->RequestStop(why); });
  if (p.slurm_executor) {
    Controller* c = p.controller.get();
    p.slurm_executor->SetController(
        [c](JobSpec spec, LaunchInfo launch, Reply<JobId> done) {
      c->Submit(std::move(spec), std::move(launch), std::move(done));
        },
        [c](JobId job, const std::string& why) {
      Caller root;
      root.user = "root";
      root.admin = true;
      c->Cancel(root, job, 0, [job, why](CallStatus st, std::optional<JobState>) {
        if (st) PHX_LOG(kInfo) << "slurm mode: job " << job << " cancelled (" << why << ")";
      });
    },
        [c](JobId job, Scheduler::JobUpdate update, Reply<void> done) {
      Caller root;
      root.user = "root";
      root.admin = true;
      c->Update(root, job, update, std::move(done));
    });
  }
  if (options.handle_signals) {
    p.signals = std::make_unique<boost::asio::signal_set>(p.io, SIGINT, SIGTERM);
    p.signals->async_wait([self](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      PHX_LOG(kInfo) << "signal " << sig << ": stopping";
      self->RequestStop();
    });
  }
  if (config.history_interval_s > 0) {
    HistoryOptions ho;
    ho.interval_s = config.history_interval_s;
    ho.retention_s = config.history_retention_s;
    p.history = std::make_unique<HistorySampler>(p.io, p.controller.get(), p.committer.get(), ho);
  }
  if (postgres) {
    // Renew the lease every lease_renew, through the committer (behind the other writes). A
    // failed renewal -- deposed by another phalanxd, or the database gone -- stops this one
    // (it steps down by exiting; systemd restarts it, as a standby: docs/deployment.md).
    p.lease_timer = std::make_unique<boost::asio::steady_timer>(p.io);
    p.renew_lease = [&p, self, lease_ms, renew_ms] {
      p.lease_timer->expires_after(std::chrono::milliseconds(renew_ms));
      p.lease_timer->async_wait([&p, self, lease_ms](const boost::system::error_code& ec) {
        if (ec) return;
        store::Batch renew;
        renew.RenewLeadership(lease_ms);
        p.committer->Enqueue(std::move(renew), [&p, self](Result<store::BatchResult> r) {
          boost::asio::post(p.io, [&p, self, r = std::move(r)] {
            if (!r) {
              self->RequestStop("renewing the store's leadership failed: " + r.error().ToString());
              return;
            }
            if (p.renew_lease) p.renew_lease();
          });
        });
      });
    };
  }
  if (p.slurm_executor && (!config.slurm.report_socket.empty() || !config.slurm.report_listen.empty())) {
    StepReportServer::Options ro;
    ro.socket = config.slurm.report_socket;
    ro.listen = config.slurm.report_listen;
    ro.munge_socket = config.slurm.munge_socket;
    ro.trusted_users = {config.slurm.report_users.begin(), config.slurm.report_users.end()};
    p.step_reports =
        std::make_unique<StepReportServer>(p.io, ro, SlurmReportHandler(p.controller.get(), p.slurm_executor.get()));
    if (auto st = p.step_reports->Start(); !st) return std::unexpected(st.error());
  }
  boost::asio::post(p.io, [c = p.controller.get(), h = p.history.get(), &p] {
    c->Start();
    if (h) h->Start();
    if (p.renew_lease) p.renew_lease();
  });
  p.io_thread = std::thread([&io = p.io] { io.run(); });

  if (!config.http_listen.empty()) {
#ifdef PHALANX_HAVE_HTTP
    http::GuardOptions http_access;
    http_access.hosts = config.http.allowed_hosts;
    http_access.origins = config.http.allowed_origins;
    if (!config.http.admin_token_file.empty()) {
      auto t = ReadSecretFile(config.http.admin_token_file, "HTTP admin token file");
      if (!t) {
        d->Stop();
        return Fail("http.admin_token_file", t.error().ToString());
      }
      http_access.admin_token = std::string(Trim(*t));
      if (http_access.admin_token.empty()) {
        d->Stop();
        return Fail(config.http.admin_token_file, "the HTTP admin token file is empty");
      }
    }
    std::promise<Status> started;
    boost::asio::post(p.io, [&] {
      auto http = HttpEndpoints::Start(p.io, config.http_listen, p.controller.get(), http_access);
      if (!http) return started.set_value(std::unexpected(http.error()));
      p.http = std::move(*http);
      p.http->set_history(p.reader.get());
      started.set_value({});
    });
    if (auto st = started.get_future().get(); !st) {
      d->Stop();
      return Fail("http.listen", st.error().ToString());
    }
#else
    d->Stop();
    return Fail("http.listen", "this phalanxd was built without the HTTP library");
#endif
  }

  // gRPC: users (Unix socket, fds handed over by the listener) and agents (TCP).
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  std::set<std::string> admins(config.admins.begin(), config.admins.end());
  UserLimits limits = config.user_limits;
  FitFileLimit(limits);
  p.rate = std::make_unique<UidRateLimiter>(limits.requests_per_second, limits.request_burst, limits.exempt_uids);
  p.identity = std::make_unique<Identity>(&p.peers, std::move(admins),
                                          std::set<std::string>(config.admin_groups.begin(), config.admin_groups.end()),
                                          p.rate.get());
  p.identity->set_agent_token(token);
  if (!config.users_tcp.listen.empty()) {
    p.user_auth = std::make_unique<CallAuthenticator>(config.users_tcp.munge_socket);
    p.identity->set_user_auth(p.user_auth.get());
  }
  p.jobs = std::make_unique<JobsService>(p.io, p.controller.get(), p.identity.get());
  p.cluster = std::make_unique<ClusterService>(p.io, p.controller.get(), p.identity.get());
  if (p.executor) p.agents = std::make_unique<AgentsService>(p.io, &p.executor->sessions(), p.identity.get());
  {
    grpc::ServerBuilder b;
    // A connection without calls for idle_timeout is closed by gRPC (after a GOAWAY); one that
    // never made a call is shut down by the listener's sweep.
    if (limits.idle_timeout_s > 0)
      b.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                           static_cast<int>(std::min(limits.idle_timeout_s * 1000, 2e9)));
    b.RegisterService(p.jobs.get());
    b.RegisterService(p.cluster.get());
    if (p.agents) b.RegisterService(p.agents.get());  // local agents, as root
    p.user_server = b.BuildAndStart();
    if (!p.user_server) {
      d->Stop();
      return Fail(config.socket_path, "the gRPC server did not start");
    }
  }
  if (!config.agents.listen.empty()) {
    grpc::ServerBuilder b;
    int port = 0;
    b.AddListeningPort(config.agents.listen, agent_creds, &port);
    b.RegisterService(p.agents.get());
    p.agent_server = b.BuildAndStart();
    if (!p.agent_server || port == 0) {
      d->Stop();
      return Fail("agents.listen", "cannot listen on '" + config.agents.listen + "'");
    }
    d->agent_port_ = port;
    PHX_LOG(kInfo) << "agents: listening on " << config.agents.listen << " (port " << port << ", "
                   << (config.agents.tls_cert.empty()        ? "token"
                       : config.agents.tls_client_ca.empty() ? "TLS + token"
                                                             : "mutual TLS")
                   << ")";
  }
  if (p.user_auth) {
    const UserTcpConfig& u = config.users_tcp;
    std::shared_ptr<grpc::ServerCredentials> creds = users_tcp_creds;
    if (grpc::Status st = p.user_auth->SelfCheck(); !st.ok())
      PHX_LOG(kWarn) << "users_tcp: MUNGE does not work here yet (" << st.error_message()
                     << "): calls over TCP are refused until it does";
    p.jobs_tcp = std::make_unique<JobsService>(p.io, p.controller.get(), p.identity.get());
    p.cluster_tcp = std::make_unique<ClusterService>(p.io, p.controller.get(), p.identity.get());
    grpc::ServerBuilder b;
    if (limits.idle_timeout_s > 0)
      b.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                           static_cast<int>(std::min(limits.idle_timeout_s * 1000, 2e9)));
    int port = 0;
    b.AddListeningPort(u.listen, creds, &port);
    b.RegisterService(p.jobs_tcp.get());
    b.RegisterService(p.cluster_tcp.get());
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
    interceptors.push_back(p.user_auth->MakeFactory());
    b.experimental().SetInterceptorCreators(std::move(interceptors));
    p.user_tcp_server = b.BuildAndStart();
    if (!p.user_tcp_server || port == 0) {
      d->Stop();
      return Fail("users_tcp.listen", "cannot listen on '" + u.listen + "'");
    }
    d->users_tcp_port_ = port;
    PHX_LOG(kInfo) << "users over TCP: listening on " << u.listen << " (port " << port << ", MUNGE credentials"
                   << (u.tls_cert.empty() ? ", no TLS" : ", TLS") << ")";
  }
  p.listener = std::make_unique<UnixListener>(config.socket_path, &p.peers, limits);
  if (auto st =
          p.listener->Start([server = p.user_server.get()](int fd) { grpc::AddInsecureChannelFromFd(server, fd); });
      !st) {
    d->Stop();
    return std::unexpected(st.error());
  }
  PHX_LOG(kInfo) << "phalanxd ready: users on " << config.socket_path << ", store " << p.store->path() << ", topology "
                 << (config.mode == "slurm" ? config.slurm.topology : config.topology) << " (" << fingerprint << ")";
  return d;
}

void Daemon::RequestStop(std::string fatal) {
  MutexLock lock(&mu_);
  if (!fatal.empty() && !fatal_) fatal_ = std::move(fatal);
  stop_requested_ = true;
  cv_.SignalAll();
}

std::optional<std::string> Daemon::Wait() {
  MutexLock lock(&mu_);
  while (!stop_requested_) cv_.Wait();
  return fatal_;
}

int Daemon::http_port() const {
#ifdef PHALANX_HAVE_HTTP
  return parts_->http ? parts_->http->port() : 0;  // constant after Start
#else
  return 0;
#endif
}

Daemon::UserSocketStats Daemon::user_socket_stats() const {
  UserSocketStats s;
  if (const UnixListener* l = parts_->listener.get()) {
    s.accepted = l->accepted();
    s.refused_connections = l->refused();
    s.idle_closed = l->idle_closed();
    s.out_of_fds = l->out_of_fds();
  }
  if (parts_->rate) s.refused_requests = parts_->rate->refused();
  s.open = parts_->peers.open();
  return s;
}

void Daemon::RunOnIo(const std::function<void(Controller&)>& fn) {
  std::promise<void> done;
  boost::asio::post(parts_->io, [&] {
    fn(*parts_->controller);
    done.set_value();
  });
  done.get_future().wait();
}

void Daemon::Stop() {
  if (stopped_) return;
  stopped_ = true;
  Parts& p = *parts_;
  // 1. No new users.
  if (p.listener) p.listener->Stop();
  // 2. The Controller answers UNAVAILABLE from now on and closes the streams it holds.
  if (p.io_thread.joinable() && p.controller)
    RunOnIo([&p](Controller& c) {
      if (p.history) p.history->Stop();
      if (p.step_reports) p.step_reports->Stop();
      p.renew_lease = nullptr;
      if (p.lease_timer) p.lease_timer->cancel();
      c.Stop();
    });
  // 3. gRPC: in-flight calls finish (the io thread and the committer still run).
  const auto deadline = std::chrono::system_clock::now() + std::chrono::seconds(2);
  if (p.agent_server) p.agent_server->Shutdown(deadline);
  if (p.user_tcp_server) p.user_tcp_server->Shutdown(deadline);
  if (p.user_server) p.user_server->Shutdown(deadline);
  if (p.agent_server) p.agent_server->Wait();
  if (p.user_tcp_server) p.user_tcp_server->Wait();
  if (p.user_server) p.user_server->Wait();
  // 4. Everything queued is committed (callbacks still reach the io thread). Then a leader hands
  // the store's lease over (PostgreSQL; nothing to do on SQLite), so a standby takes over at its
  // next try instead of waiting out the lease: the committer is closed, nothing writes any more.
  if (p.committer) p.committer->Close();
  if (p.store && p.store->epoch() != 0 && !p.store->deposed()) {
    if (auto st = p.store->ResignLeadership(); st)
      PHX_LOG(kInfo) << "store " << p.store->path() << ": resigned the leadership (epoch " << p.store->epoch()
                     << ") for a standby to take over";
    else
      PHX_LOG(kWarn) << "store " << p.store->path() << ": could not resign the leadership (" << st.error().ToString()
                     << "); a standby takes over when the lease ends";
  }
  // 5. The io thread runs out of work and ends.
  if (p.io_thread.joinable()) {
    boost::asio::post(p.io, [&p] {
      if (p.signals) p.signals->cancel();
#ifdef PHALANX_HAVE_HTTP
      if (p.http) p.http->Stop();
      p.http.reset();
#endif
    });
    p.work.reset();
    p.io_thread.join();
  }
  p.history.reset();
  p.step_reports.reset();
  p.controller.reset();
  p.executor.reset();
  p.slurm_executor.reset();
  p.committer.reset();
  p.reader.reset();
  p.store.reset();
  RequestStop();
  PHX_LOG(kInfo) << "phalanxd stopped";
}

}  // namespace phalanx::service
