#include "service/http_endpoints.h"

#include <charconv>

#include "service/api_views.h"
#include "service/http/responses.h"
#include "service/http/router.h"
#include "util/json.h"
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
  dashboard_.reset();
}

Status HttpEndpoints::RegisterMetrics() {
  // Names follow Prometheus' conventions (docs/http.md has the table): the unit last (_gpus,
  // _seconds, _ratio for 0..1), _total on counters (the registry adds it), state in a label.
  struct Gauge {
    const char* name;
    const char* help;
    std::vector<std::string> labels;
    h::GaugeFamily** out;
  };
  const Gauge gauges[] = {
      {"phalanx_jobs", "Jobs not finished, by state (pending, running, checkpointing).", {"state"}, &jobs_},
      {"phalanx_gpus",
       "GPUs by state: allocated (held by a job), idle (free on an up node), drained, down (free on a drained or "
       "down node). They add up to the cluster's GPUs.",
       {"state"},
       &gpus_},
      {"phalanx_nodes", "Nodes by state (up, drained, down).", {"state"}, &nodes_},
      {"phalanx_queue_jobs", "Pending jobs by the core's wait reason.", {"reason"}, &queue_},
      {"phalanx_largest_free_block_gpus",
       "Largest block of free GPUs inside one domain of the level.",
       {"level"},
       &free_block_},
      {"phalanx_whole_free_domains", "Domains of the level with every GPU free.", {"level"}, &whole_free_},
      {"phalanx_fragmentation_ratio",
       "Share of the idle GPUs outside wholly free domains of the level (0..1; 0 when none is idle).",
       {"level"},
       &frag_level_},
      {"phalanx_fragmentation_fgd_ratio",
       "Shape-aware fragmentation (FGD): share of the idle GPUs the job mix cannot use (0..1).",
       {},
       &fgd_},
      {"phalanx_placement_efficiency_ratio",
       "GPU-weighted mean of predicted bus bandwidth over the best possible, running jobs of more than 1 GPU (0..1; "
       "1 when there is none).",
       {},
       &efficiency_},
      {"phalanx_user_gpus",
       "GPUs held by running and checkpointing jobs, by user (users holding none are left out).",
       {"user"},
       &user_gpus_},
      {"phalanx_account_gpus",
       "GPUs held by running and checkpointing jobs, by account (accounts holding none are left out).",
       {"account"},
       &account_gpus_},
      {"phalanx_reservation_overdue_seconds",
       "Longest time a pending job has waited past the first start time the scheduler predicted for it, by job size "
       "in GPUs (0: none late).",
       {"size"},
       &overdue_},
      {"phalanx_agents_connected", "Node agents with an open Connect stream.", {}, &agents_},
      {"phalanx_store_free_bytes",
       "Bytes available on the store's file system (absent when store.min_free is 0 or it cannot be read).",
       {},
       &store_free_},
      {"phalanx_store_low_space",
       "1 while the store's file system has less free space than store.min_free (user writes are refused), else 0.",
       {},
       &store_low_},
  };
  for (const Gauge& g : gauges) {
    auto f = metrics_.AddGauge(g.name, g.help, g.labels);
    if (!f) return std::unexpected(f.error());
    *g.out = *f;
  }
  auto pass =
      metrics_.AddHistogram("phalanx_schedule_pass_seconds", "Wall time of one scheduling pass.", {},
                            {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5});
  if (!pass) return std::unexpected(pass.error());
  pass_ = *pass;
  auto wait = metrics_.AddHistogram("phalanx_job_wait_seconds", "Submission to first start, by job size in GPUs.",
                                    {"size"}, {1, 10, 30, 60, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400});
  if (!wait) return std::unexpected(wait.error());
  wait_ = *wait;
  struct Counter {
    const char* name;
    const char* help;
    std::vector<std::string> labels;
    h::CounterFamily** out;
  };
  const Counter counters[] = {
      {"phalanx_decisions", "Decisions carried out, by kind.", {"kind"}, &decisions_},
      {"phalanx_submissions", "Jobs accepted by Submit.", {}, &submissions_},
      {"phalanx_http_requests", "HTTP requests served.", {}, &requests_},
      {"phalanx_preemptions",
       "Preemptions of jobs (each job's count growing), since phalanxd started.",
       {},
       &preemptions_},
      {"phalanx_lost_gpu_seconds",
       "GPU-seconds of work lost by preemptions and failures, since phalanxd started.",
       {},
       &lost_gpu_s_},
  };
  for (const Counter& c : counters) {
    auto f = metrics_.AddCounter(c.name, c.help, c.labels);
    if (!f) return std::unexpected(f.error());
    *c.out = *f;
  }
  for (std::string_view size : kJobSizeBuckets) wait_->WithLabels({size});
  metrics_.AddCollector([this] { Collect(); });
  return {};
}

void HttpEndpoints::Collect() {
  const ClusterSnapshot s = TakeSnapshot(*controller_, best_.get(), &first_predicted_);
  for (const auto& [state, n] : s.jobs_by_state) jobs_->WithLabels({state}).Set(n);
  gpus_->WithLabels({"allocated"}).Set(s.gpus_allocated);
  gpus_->WithLabels({"idle"}).Set(s.gpus_idle);
  gpus_->WithLabels({"drained"}).Set(s.gpus_drained);
  gpus_->WithLabels({"down"}).Set(s.gpus_down);
  nodes_->WithLabels({"up"}).Set(s.nodes_up);
  nodes_->WithLabels({"drained"}).Set(s.nodes_drained);
  nodes_->WithLabels({"down"}).Set(s.nodes_down);
  // Every reason, 0 included: a series that comes and goes breaks rate() and alerts.
  for (int k = static_cast<int>(WaitKind::kNone); k <= static_cast<int>(kLastWaitKind); ++k) {
    const std::string reason(WaitKindName(static_cast<WaitKind>(k)));
    auto it = s.queue_by_reason.find(reason);
    queue_->WithLabels({reason}).Set(it == s.queue_by_reason.end() ? 0 : it->second);
  }
  free_block_->Clear();
  whole_free_->Clear();
  frag_level_->Clear();
  for (const LevelSnapshot& l : s.levels) {
    free_block_->WithLabels({l.level}).Set(l.largest_free_block);
    whole_free_->WithLabels({l.level}).Set(l.whole_free_domains);
    frag_level_->WithLabels({l.level}).Set(l.fragmentation);
  }
  fgd_->WithLabels({}).Set(s.fgd);
  efficiency_->WithLabels({}).Set(s.placement_efficiency.value_or(1.0));
  user_gpus_->Clear();
  for (const auto& [user, n] : s.user_gpus) user_gpus_->WithLabels({user}).Set(n);
  account_gpus_->Clear();
  for (const auto& [account, n] : s.account_gpus) account_gpus_->WithLabels({account}).Set(n);
  for (const auto& [size, late] : s.reservation_overdue_s) overdue_->WithLabels({size}).Set(late);
  agents_->WithLabels({}).Set(static_cast<double>(controller_->agents_connected()));
  if (StoreSpace* space = controller_->store_space(); space != nullptr) {
    space->Refresh();
    store_free_->Clear();
    if (space->free_bytes()) store_free_->WithLabels({}).Set(static_cast<double>(*space->free_bytes()));
    store_low_->WithLabels({}).Set(space->low() ? 1 : 0);
  }
  if (server_) requests_->WithLabels({}).SetTotal(static_cast<double>(server_->stats().requests));
  // Counters from the core's per-job counts: what grew since the last scrape.
  if (have_losses_) {
    for (const auto& [id, now] : s.job_losses) {
      auto it = last_losses_.find(id);
      const auto before = it == last_losses_.end() ? std::pair<uint32_t, double>{0, 0.0} : it->second;
      if (now.first > before.first) preemptions_->WithLabels({}).Inc(now.first - before.first);
      if (now.second > before.second) lost_gpu_s_->WithLabels({}).Inc(now.second - before.second);
    }
  }
  last_losses_ = s.job_losses;
  have_losses_ = true;
}

void HttpEndpoints::set_history(store::Store* reader) {
  history_ = reader;
  if (dashboard_) dashboard_->set_store(reader);
}

h::Response HttpEndpoints::History(const h::Request& r) const {
  if (history_ == nullptr) return h::ErrorResponse(503, "history: this phalanxd keeps no history store");
  store::HistoryQuery q;
  for (const std::string& v : r.QueryValues("series")) {
    for (std::string_view part : Split(v, ',')) {
      const std::string name(part);
      if (name.empty()) continue;
      const size_t star = name.find('*');
      if (star != std::string::npos && (star + 1 != name.size() || !name.ends_with(".*") || name.size() < 3))
        return h::ErrorResponse(400, "series: '" + name + "': '*' only as a last \".*\" (user_gpus.*)");
      q.names.push_back(name);
    }
  }
  if (q.names.empty()) return h::ErrorResponse(400, "series: missing (series=NAME[,NAME...]; docs/monitoring.md)");
  if (q.names.size() > 64) return h::ErrorResponse(400, "series: more than 64 names");
  if (auto v = r.QueryValue("since")) {
    auto t = ParseNumber<int64_t>(*v);
    if (!t) return h::ErrorResponse(400, "since: '" + *v + "' is not a whole number of seconds (Unix time)");
    q.since = *t;
  }
  if (auto v = r.QueryValue("step")) {
    auto t = ParseNumber<int64_t>(*v);
    if (!t || *t <= 0) return h::ErrorResponse(400, "step: '" + *v + "' is not a whole number of seconds > 0");
    q.step = *t;
  }
  q.max_points = 500000;
  auto answer = history_->ReadHistory(q);
  if (!answer) {
    const bool too_many = answer.error().message.find("more than") != std::string::npos;
    return h::ErrorResponse(too_many ? 400 : 500, answer.error().ToString());
  }
  h::Response out;
  out.content_type = "application/json";
  std::string& b = out.body;
  b = "{\"series\":{";
  bool first = true;
  char num[64];
  for (const auto& [name, points] : *answer) {
    if (!first) b += ',';
    first = false;
    b += JsonQuote(name);
    b += ":[";
    for (size_t i = 0; i < points.size(); ++i) {
      const auto [end, ec] = std::to_chars(num, num + sizeof num, points[i].value);
      b += i == 0 ? "[" : ",[";
      b += std::to_string(points[i].time);
      b += ',';
      b.append(num, ec == std::errc() ? end : num);
      b += ']';
    }
    b += ']';
  }
  b += "}}";
  return out;
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
  e->best_ = std::make_unique<BestBusbw>(controller->core().topology());
  if (auto st = e->RegisterMetrics(); !st) return Fail("metrics", st.error().ToString());
  HttpEndpoints* self = e.get();
  ControllerObserver obs;
  e->dashboard_ = std::make_unique<Dashboard>(controller);
  e->dashboard_->Watch();
  obs.pass = [self](double seconds) {
    self->pass_->WithLabels({}).Observe(seconds);
    if (self->dashboard_) self->dashboard_->AfterPass();
  };
  obs.decision = [self](const Decision& d, const JobRecord* job) {
    self->decisions_->WithLabels({DecisionKindName(d.kind)}).Inc();
    if (d.kind == DecisionKind::kStart && job != nullptr && job->preemptions == 0)
      self->wait_->WithLabels({JobSizeBucket(job->spec.shape.gpus)})
          .Observe(static_cast<double>(d.at - job->spec.submit));
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
  added.push_back(
      router.Get("/api/v1/history", [self](const h::Request& r, const h::PathParams&) { return self->History(r); }));
  e->dashboard_->AddRoutes(
      router, [self](const h::Request& r) { return self->Viewer(r); }, &added);
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
