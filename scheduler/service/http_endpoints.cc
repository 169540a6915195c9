#include "service/http_endpoints.h"

#include "service/api_views.h"
#include "service/http/responses.h"
#include "service/http/router.h"
#include "util/log.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace phalanx::service {
namespace {

namespace h = ::phalanx::http;

h::Response FromStatus(const grpc::Status& st) {
  switch (st.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT: return h::ErrorResponse(400, st.error_message());
    case grpc::StatusCode::NOT_FOUND: return h::ErrorResponse(404, st.error_message());
    case grpc::StatusCode::PERMISSION_DENIED: return h::ErrorResponse(403, st.error_message());
    case grpc::StatusCode::FAILED_PRECONDITION: return h::ErrorResponse(409, st.error_message());
    case grpc::StatusCode::UNAVAILABLE: return h::ErrorResponse(503, st.error_message());
    default: return h::ErrorResponse(500, st.error_message());
  }
}

template <typename Msg, typename Call>
h::Response Answer(Call call) {
  Msg out;
  grpc::Status st = call(&out);
  return st.ok() ? h::JsonResponse(out) : FromStatus(st);
}

Result<v1::ListJobsRequest> ListRequest(const h::Request& r) {
  v1::ListJobsRequest req;
  for (const std::string& s : r.QueryValues("state")) {
    std::string name = ToUpper(s);
    if (!name.starts_with("JOB_STATE_")) name = "JOB_STATE_" + name;
    v1::JobState st;
    if (!v1::JobState_Parse(name, &st) || st == v1::JOB_STATE_UNSPECIFIED)
      return Fail("state", "'" + s + "' is not a job state");
    req.add_states(st);
  }
  if (auto u = r.QueryValue("user")) req.set_user(*u);
  if (auto f = r.QueryValue("include_finished")) {
    if (*f == "true" || *f == "1") req.set_include_finished(true);
    else if (*f != "false" && *f != "0") return Fail("include_finished", "'" + *f + "' is not true, false, 1 or 0");
  }
  if (auto l = r.QueryValue("limit")) {
    auto v = ParseNumber<uint64_t>(*l);
    if (!v || *v > UINT32_MAX) return Fail("limit", "'" + *l + "' is not an unsigned integer");
    req.set_limit(static_cast<uint32_t>(*v));
  }
  return req;
}

Result<std::pair<std::string, uint16_t>> SplitListen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return Fail("http.listen", "'" + listen + "' is not host:port");
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  auto port = ParseNumber<uint64_t>(std::string_view(listen).substr(colon + 1));
  if (!port || *port > 65535) return Fail("http.listen", "'" + listen + "': bad port");
  return std::make_pair(host, static_cast<uint16_t>(*port));
}

}  // namespace

HttpEndpoints::~HttpEndpoints() { Stop(); }

Caller HttpEndpoints::Viewer(const h::Request& r) const {
  Caller who;
  who.uid = who.gid = UINT32_MAX;
  if (guard_ && guard_->Admin(r)) {
    who.user = "http-admin";
    who.admin = true;
  }
  return who;  // else anonymous: user "", owner of nothing, so every job is someone else's
}

void HttpEndpoints::Stop() {
  if (server_) server_->Stop();
  if (controller_) controller_->set_observer({});
}

Status HttpEndpoints::RegisterMetrics() {
  const auto check = [](auto r, auto** out) -> Status {
    PHX_ASSIGN_OR_RETURN(*out, std::move(r));
    return {};
  };
  Status st;
  if (st = check(metrics_.AddGauge("phalanx_jobs", "Jobs not finished, by state.", {"state"}), &jobs_); !st) return st;
  if (st =
          check(metrics_.AddGauge("phalanx_gpus",
                                  "GPUs by state (allocated, free, unavailable: on drained or down nodes).", {"state"}),
                &gpus_);
      !st)
    return st;
  if (st = check(metrics_.AddGauge("phalanx_free_block_gpus",
                                   "Largest block of free GPUs inside one domain of the level.", {"level"}),
                 &free_block_);
      !st)
    return st;
  if (st =
          check(metrics_.AddGauge("phalanx_whole_free_domains", "Domains of the level with every GPU free.", {"level"}),
                &whole_free_);
      !st)
    return st;
  if (st = check(metrics_.AddGauge("phalanx_fragmentation_fgd",
                                   "Shape-aware fragmentation: fragmented share of the idle GPUs (0..1)."),
                 &fgd_);
      !st)
    return st;
  if (st = check(metrics_.AddGauge("phalanx_agents_connected", "Node agents with an open Connect stream."), &agents_);
      !st)
    return st;
  if (st = check(metrics_.AddHistogram(
                     "phalanx_schedule_pass_seconds", "Wall time of one scheduling pass.", {},
                     {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}),
                 &pass_);
      !st)
    return st;
  if (st = check(metrics_.AddHistogram("phalanx_job_wait_seconds", "Submission to first start.", {},
                                       {1, 10, 30, 60, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400}),
                 &wait_);
      !st)
    return st;
  if (st = check(metrics_.AddCounter("phalanx_decisions", "Decisions carried out.", {"kind"}), &decisions_); !st)
    return st;
  if (st = check(metrics_.AddCounter("phalanx_submissions", "Jobs accepted by Submit."), &submissions_); !st) return st;
  if (st = check(metrics_.AddCounter("phalanx_http_requests", "HTTP requests served."), &requests_); !st) return st;
  metrics_.AddCollector([this] {
    v1::GetStatsResponse stats;
    (void)views::GetStats(*controller_, &stats);
    jobs_->Clear();
    for (const char* s : {"pending", "running", "checkpointing"}) {
      auto it = stats.jobs_by_state().find(s);
      jobs_->WithLabels({s}).Set(it == stats.jobs_by_state().end() ? 0 : it->second);
    }
    gpus_->WithLabels({"allocated"}).Set(stats.gpus_allocated());
    gpus_->WithLabels({"unavailable"}).Set(stats.gpus_unavailable());
    gpus_->WithLabels({"free"}).Set(static_cast<double>(stats.gpus_total()) - stats.gpus_allocated() -
                                    std::min(stats.gpus_unavailable(), stats.gpus_total() - stats.gpus_allocated()));
    v1::GetFragmentationResponse frag;
    (void)views::GetFragmentation(*controller_, &frag);
    free_block_->Clear();
    whole_free_->Clear();
    for (const v1::LevelFragmentation& l : frag.levels()) {
      free_block_->WithLabels({l.level()}).Set(l.largest_free_block());
      whole_free_->WithLabels({l.level()}).Set(l.whole_free());
    }
    fgd_->WithLabels({}).Set(frag.fgd());
    agents_->WithLabels({}).Set(static_cast<double>(controller_->agents_connected()));
    if (server_) requests_->WithLabels({}).SetTotal(static_cast<double>(server_->stats().requests));
  });
  return {};
}

Result<std::unique_ptr<HttpEndpoints>> HttpEndpoints::Start(boost::asio::io_context& io, const std::string& listen,
                                                            Controller* controller, h::GuardOptions access) {
  PHX_ASSIGN_OR_RETURN(auto where, SplitListen(listen));
  std::unique_ptr<HttpEndpoints> e(new HttpEndpoints());
  e->controller_ = controller;
  std::vector<std::string> hosts = h::DefaultAllowedHosts(where.first);
  hosts.insert(hosts.end(), access.hosts.begin(), access.hosts.end());
  access.hosts = std::move(hosts);
  e->guard_ = std::make_unique<h::RequestGuard>(std::move(access));
  if (auto st = e->RegisterMetrics(); !st) return Fail("metrics", st.error().ToString());
  HttpEndpoints* self = e.get();
  ControllerObserver obs;
  obs.pass = [self](double seconds) { self->pass_->WithLabels({}).Observe(seconds); };
  obs.decision = [self](const Decision& d, const JobRecord* job) {
    self->decisions_->WithLabels({DecisionKindName(d.kind)}).Inc();
    if (d.kind == DecisionKind::kStart && job != nullptr && job->preemptions == 0)
      self->wait_->WithLabels({}).Observe(static_cast<double>(d.at - job->spec.submit));
  };
  obs.submitted = [self] { self->submissions_->WithLabels({}).Inc(); };
  controller->set_observer(std::move(obs));

  h::Router router;
  std::vector<Status> added;
  added.push_back(router.Get("/healthz", [self](const h::Request&, const h::PathParams&) {
    if (self->controller_->stopped()) return h::ErrorResponse(503, "phalanxd is shutting down");
    if (self->controller_->failed()) return h::ErrorResponse(503, "the store failed; phalanxd is stopping");
    return h::TextResponse(200, "ok\n");
  }));
  added.push_back(router.Get(
      "/metrics", [self](const h::Request&, const h::PathParams&) { return h::MetricsResponse(self->metrics_); }));
  added.push_back(router.Get("/api/v1/jobs", [self](const h::Request& r, const h::PathParams&) {
    auto req = ListRequest(r);
    if (!req) return h::ErrorResponse(400, req.error().ToString());
    return Answer<v1::ListJobsResponse>(
        [&](v1::ListJobsResponse* out) { return views::ListJobs(*self->controller_, self->Viewer(r), *req, out); });
  }));
  added.push_back(router.Get("/api/v1/jobs/{id}", [self](const h::Request& r, const h::PathParams& p) {
    auto id = ParseNumber<uint64_t>(p.at("id"));
    if (!id) return h::ErrorResponse(400, "id: '" + p.at("id") + "' is not an unsigned integer");
    v1::GetJobRequest req;
    req.set_job_id(*id);
    return Answer<v1::Job>([&](v1::Job* out) { return views::GetJob(*self->controller_, self->Viewer(r), req, out); });
  }));
  added.push_back(router.Get("/api/v1/nodes", [self](const h::Request&, const h::PathParams&) {
    return Answer<v1::ListNodesResponse>(
        [&](v1::ListNodesResponse* out) { return views::ListNodes(*self->controller_, out); });
  }));
  added.push_back(router.Get("/api/v1/stats", [self](const h::Request&, const h::PathParams&) {
    return Answer<v1::GetStatsResponse>(
        [&](v1::GetStatsResponse* out) { return views::GetStats(*self->controller_, out); });
  }));
  added.push_back(router.Get("/api/v1/fragmentation", [self](const h::Request&, const h::PathParams&) {
    return Answer<v1::GetFragmentationResponse>(
        [&](v1::GetFragmentationResponse* out) { return views::GetFragmentation(*self->controller_, out); });
  }));
  added.push_back(router.Get("/api/v1/topology", [self](const h::Request&, const h::PathParams&) {
    return Answer<v1::GetTopologyResponse>(
        [&](v1::GetTopologyResponse* out) { return views::GetTopology(*self->controller_, out); });
  }));
  for (const Status& st : added) {
    if (!st) return Fail("http routes", st.error().ToString());
  }
  // Router-wide: the guard sees every request before any route (and before a 404 or 405).
  PHX_ASSIGN_OR_RETURN(auto server,
                       h::Server::Start(io, where.first, where.second, e->guard_->Wrap(std::move(router).ToHandler())));
  e->server_ = std::move(server);
  PHX_LOG(kInfo) << "http: listening on " << e->server_->address();
  return e;
}

}  // namespace phalanx::service
