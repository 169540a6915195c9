#include "service/dashboard.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <set>

#include "adapters/store/codec.h"
#include "adapters/store/store.h"
#include "adapters/topology/topology_text.h"
#include "core/topology/fragmentation.h"
#include "service/api_views.h"
#include "service/http/responses.h"
#include "util/json.h"
#include "util/log.h"
#include "util/numbers.h"
#include "util/strings.h"
#include "web/web_assets.h"

namespace phalanx::service {
namespace {

namespace h = ::phalanx::http;

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

h::Response Json(std::string body) {
  h::Response r;
  r.content_type = "application/json";
  r.body = std::move(body);
  r.headers.emplace_back("Cache-Control", "no-store");
  return r;
}

// The page's files: revalidated every time (no-cache) against a strong ETag, so a new phalanxd
// is picked up at once and an unchanged file costs a 304.
h::Response Asset(const h::Request& req, const web::WebAsset& a) {
  h::Response r;
  r.headers.emplace_back("ETag", std::string(a.etag));
  r.headers.emplace_back("Cache-Control", "no-cache");
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  if (a.name == "index.html") {
    // Everything from phalanxd itself: no inline script, no other origin.
    r.headers.emplace_back("Content-Security-Policy",
                           "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'");
  }
  std::string_view inm = req.Header("if-none-match");
  if (!inm.empty() && (inm == "*" || inm.find(a.etag) != std::string_view::npos)) {
    r.status = 304;
    r.content_type.clear();
    return r;
  }
  r.content_type = std::string(a.content_type);
  r.body = std::string(a.body);
  return r;
}

std::string SampleJson(const Dashboard::Sample& s) {
  return "{\"time\":" + std::to_string(s.time) + ",\"allocated\":" + std::to_string(s.allocated) +
         ",\"unavailable\":" + std::to_string(s.unavailable) + ",\"total\":" + std::to_string(s.total) +
         ",\"pending\":" + std::to_string(s.pending) + ",\"running\":" + std::to_string(s.running) +
         ",\"largest_free\":" + std::to_string(s.largest_free) + ",\"fgd\":" + Num(s.fgd) + "}";
}

std::string EventDetail(const JobRecord& job) {
  std::string d = std::string(JobStateName(job.state)) + ", " + std::to_string(job.gpus.size()) + " GPUs";
  if (job.checkpoint_epoch > 0) d += ", checkpoint " + std::to_string(job.checkpoint_epoch);
  if (job.state == JobState::kPending && job.wait.kind != WaitKind::kNone)
    d += ", " + std::string(WaitKindName(job.wait.kind));
  return d;
}

// A stored event's payload ("gpus=0-7 reason=busbw%20360.0%20GB/s") for people: each value
// unescaped (store::Escape), left as it is where it does not decode.
std::string Readable(std::string_view payload) {
  std::string out;
  for (std::string_view field : Split(payload, ' ')) {
    if (!out.empty()) out += ' ';
    const size_t eq = field.find('=');
    auto value = store::Unescape(eq == std::string_view::npos ? field : field.substr(eq + 1));
    if (!value) {
      out += field;
      continue;
    }
    if (eq != std::string_view::npos) out += std::string(field.substr(0, eq + 1));
    out += *value;
  }
  return out;
}

}  // namespace

// Job events into the history (the Controller's Watch of every job).
class Dashboard::HistorySink final : public JobEventSink {
 public:
  explicit HistorySink(Dashboard* d) : dashboard_(d) {}
  bool Send(Time time, std::string_view kind, const JobRecord& job) override {
    if (dashboard_ == nullptr) return false;
    dashboard_->Record(time, kind, job);
    return true;
  }
  bool closed() const override { return dashboard_ == nullptr; }
  void Close(const CallError&) override { dashboard_ = nullptr; }
  void Detach() { dashboard_ = nullptr; }

 private:
  Dashboard* dashboard_;
};

// One browser's /api/v1/events: the Controller's job events as "job" events.
class SseSink final : public JobEventSink {
 public:
  SseSink(Controller* c, Caller viewer, std::shared_ptr<h::EventStream> s)
      : controller_(c), viewer_(std::move(viewer)), stream_(std::move(s)) {}
  bool Send(Time time, std::string_view kind, const JobRecord& job) override {
    v1::JobEvent ev;
    ev.set_time(time);
    ev.set_kind(std::string(kind));
    // As the reader may see it (private_data): redacted, or not sent at all for a hidden job.
    if (!views::FillJob(*controller_, job, viewer_, false, ev.mutable_job())) return !stream_->closed();
    return stream_->Send("job", h::JsonResponse(ev).body);
  }
  bool closed() const override { return stream_->closed(); }
  void Close(const CallError&) override { stream_->Close(); }

 private:
  Controller* const controller_;
  const Caller viewer_;
  const std::shared_ptr<h::EventStream> stream_;
};

Dashboard::Dashboard(Controller* controller, DashboardOptions options) : controller_(controller), options_(options) {}

Dashboard::~Dashboard() {
  if (sink_) sink_->Detach();
  for (auto& s : streams_) s->Close();
}

void Dashboard::Watch() {
  sink_ = std::make_shared<HistorySink>(this);
  controller_->Watch(WatchFilter{}, sink_);
}

void Dashboard::Record(Time time, std::string_view kind, const JobRecord& job) {
  placeable_stale_ = true;
  std::vector<Event>& events = history_[job.spec.id];
  if (events.size() >= options_.max_events_per_job) events.erase(events.begin() + 1);  // keep the first
  events.push_back(Event{time, std::string(kind), EventDetail(job)});
  while (history_.size() > options_.max_jobs_kept) history_.erase(history_.begin());
}

Dashboard::Sample Dashboard::TakeSample() const {
  const Scheduler& core = controller_->core();
  const Topology& topo = core.topology();
  Sample s;
  s.time = core.now();
  s.total = static_cast<uint32_t>(topo.gpu_count());
  for (uint32_t g = 0; g < topo.gpu_count(); ++g) {
    const JobId owner = topo.owner(GpuId(g));
    if (owner != kNoJob && owner != Topology::kHeld) ++s.allocated;
    if (topo.node_state(topo.node_of(GpuId(g))) != NodeState::kUp) ++s.unavailable;
  }
  std::vector<uint32_t> sizes;
  for (const auto& [id, job] : core.jobs()) {
    if (job.state == JobState::kPending) ++s.pending;
    if (HoldsGpus(job)) ++s.running;
    if (!IsFinal(job.state)) sizes.push_back(job.spec.shape.gpus);
  }
  if (sizes.empty()) {
    for (uint32_t g = 1; g <= 2 * topo.max_gpus_per_node(); g *= 2) sizes.push_back(g);
  }
  const auto largest = LargestFreeBlocks(topo);
  s.largest_free = *std::max_element(largest.begin(), largest.end());  // the top level's
  FragmentationProbe probe(topo, ShapeMix(sizes));
  const uint32_t idle = topo.free_gpus(topo.root());
  s.fgd = idle == 0 ? 0.0 : probe.FragmentedGpus(topo) / idle;
  return s;
}

void Dashboard::AfterPass() {
  placeable_stale_ = true;
  // Node states change without a job event (drain, resume, an agent lost): say so.
  const Topology& topo = controller_->core().topology();
  std::vector<uint8_t> states(topo.node_count());
  for (uint32_t n = 0; n < topo.node_count(); ++n) states[n] = static_cast<uint8_t>(topo.node_state(NodeId(n)));
  if (states != node_states_) {
    uint32_t changed = 0;
    for (size_t n = 0; n < states.size(); ++n) changed += n >= node_states_.size() || states[n] != node_states_[n];
    if (!node_states_.empty()) Broadcast("nodes", "{\"changed\":" + std::to_string(changed) + "}");
    node_states_ = std::move(states);
  }
  const auto now = std::chrono::steady_clock::now();
  if (now < next_sample_) return;
  next_sample_ = now + std::chrono::milliseconds(static_cast<int64_t>(options_.sample_interval_s * 1000));
  samples_.push_back(TakeSample());
  while (samples_.size() > options_.max_samples) samples_.pop_front();
  Broadcast("sample", SampleJson(samples_.back()));
}

void Dashboard::Broadcast(std::string_view event, const std::string& data) {
  std::erase_if(streams_, [&](const std::shared_ptr<h::EventStream>& s) { return !s->Send(event, data); });
}

std::string Dashboard::MapJson() const {
  const Scheduler& core = controller_->core();
  const Topology& topo = core.topology();
  std::string o;
  o.reserve(64 * topo.domain_count() + 8 * topo.gpu_count() + 1024);
  o += "{\"now\":" + std::to_string(core.now()) + ",\"name\":" + JsonQuote(topo.name());
  o += ",\"gpus\":" + std::to_string(topo.gpu_count()) + ",\"nodes\":" + std::to_string(topo.node_count());
  // Domains from the node level up, depth-first: [level, name, parent (index in this list, -1
  // for the top), first GPU, GPUs, node state (nodes only: up, drain, down)].
  o += ",\"domains\":[";
  std::vector<int> index(topo.domain_count(), -1);
  int next = 0;
  for (uint32_t d = 0; d < topo.domain_count(); ++d) {
    const Domain& dom = topo.domain(DomainId(d));
    if (dom.level < Level::kNode) continue;
    index[d] = next++;
    const int parent = dom.parent.valid() ? index[dom.parent.value] : -1;
    if (index[d] > 0) o += ',';
    o += "[\"" + std::string(LevelName(dom.level)) + "\"," + JsonQuote(dom.name) + "," + std::to_string(parent) + "," +
         std::to_string(dom.first_gpu) + "," + std::to_string(dom.gpu_count);
    if (dom.level == Level::kNode) {
      const NodeId n = topo.node_of(GpuId(dom.first_gpu));
      o += ",\"" + std::string(NodeStateName(topo.node_state(n))) + "\"";
    }
    o += "]";
  }
  // Every GPU's owner: a job id, 0 for none, -1 for held by a what-if (never between passes),
  // -2 for a job Phalanx does not place (the Slurm mode's external load).
  o += "],\"owner\":[";
  for (uint32_t g = 0; g < topo.gpu_count(); ++g) {
    if (g > 0) o += ',';
    const JobId owner = topo.owner(GpuId(g));
    o += owner == Topology::kHeld      ? std::string("-1")
         : Topology::IsExternal(owner) ? std::string("-2")
                                       : std::to_string(owner);
  }
  // Per running job: predicted busbw of its placement and of the best block of its size.
  o += "],\"jobs\":{";
  bool first = true;
  for (const auto& [id, job] : core.jobs()) {
    if (job.gpus.empty() || IsFinal(job.state)) continue;
    const uint32_t n = static_cast<uint32_t>(job.gpus.size());
    if (!first) o += ',';
    first = false;
    o += "\"" + std::to_string(id) + "\":{\"gpus\":" + std::to_string(n) + ",\"busbw_gbs\":" + Num(job.busbw_gbs) +
         ",\"best_busbw_gbs\":" + Num(BestBusbw(n)) + ",\"start\":" + std::to_string(job.start) +
         ",\"expected_end\":" + std::to_string(job.expected_end()) + "}";
  }
  o += "}}";
  return o;
}

double Dashboard::BestBusbw(uint32_t gpus) const {
  if (auto it = best_busbw_.find(gpus); it != best_busbw_.end()) return it->second;
  const Scheduler& core = controller_->core();
  if (!empty_) {
    // The cluster with every job gone and every node up: what a job could get at best.
    empty_ = std::make_unique<Topology>(core.topology());
    for (const auto& [id, job] : core.jobs()) {
      if (!empty_->job_gpus(id).empty()) (void)empty_->Release(id);
    }
    for (uint32_t n = 0; n < empty_->node_count(); ++n) (void)empty_->SetNodeState(NodeId(n), NodeState::kUp);
  }
  Placer placer(*empty_, core.placer().model().params());
  PlacementRequest req;
  req.gpus = gpus;
  const PlaceOutcome out = placer.Place(req);
  const double best = out.status == PlaceStatus::kPlaced ? out.placement.prediction.busbw_gbs : 0.0;
  best_busbw_.emplace(gpus, best);
  return best;
}

std::string Dashboard::PlaceableJson() const {
  const Scheduler& core = controller_->core();
  const Topology& topo = core.topology();
  const auto largest = LargestFreeBlocks(topo);
  // Common sizes per level: powers of two up to the level's domain, and the whole domain. The
  // core level asks for no topology constraint at all.
  struct LevelInfo {
    Level level = Level::kNode;
    uint32_t domains = 0, domain_gpus = 0;
    std::map<uint32_t, uint32_t> by_free;  // free GPUs -> domains (0 left out)
  };
  std::vector<LevelInfo> levels;
  for (int l = kLevelCount - 1; l >= static_cast<int>(Level::kNode); --l) {
    LevelInfo info;
    info.level = static_cast<Level>(l);
    for (uint32_t d = 0; d < topo.domain_count(); ++d) {
      const Domain& dom = topo.domain(DomainId(d));
      if (dom.level != info.level) continue;
      ++info.domains;
      info.domain_gpus = std::max(info.domain_gpus, dom.gpu_count);
      if (const uint32_t f = topo.free_gpus(DomainId(d)); f > 0) ++info.by_free[f];
    }
    if (info.domains > 0) levels.push_back(std::move(info));
  }
  // The answers per shape: the Placer and the core's what-if, whose cost grows with the shapes'
  // sizes (on 4,096 busy nodes, seconds: docs/dashboard.md). Made again only after a pass, a
  // job event or a new event time, and then no sooner than 9x their last cost after it (at
  // most a tenth of the io thread); in between the last ones are served, with their time.
  const std::pair<uint64_t, Time> version{controller_->stats().passes, core.now()};
  const auto steady = std::chrono::steady_clock::now();
  if (shape_json_.size() != levels.size() ||
      ((placeable_stale_ || placeable_version_ != version) && steady >= next_answers_)) {
    std::vector<JobSpec> shapes;
    std::vector<size_t> per_level;
    for (const LevelInfo& info : levels) {
      std::set<uint32_t> sizes;
      for (uint32_t g = 1; g <= info.domain_gpus; g *= 2) sizes.insert(g);
      sizes.insert(info.domain_gpus);
      per_level.push_back(sizes.size());
      for (uint32_t g : sizes) {
        JobSpec& spec = shapes.emplace_back();
        spec.shape.gpus = g;
        spec.shape.level = info.level;
        spec.shape.fit = info.level == Level::kCore ? FitMode::kAny : FitMode::kRequire;
      }
    }
    const auto answers = core.WhatIfStarts(shapes, core.now());
    shape_json_.assign(levels.size(), "");
    size_t next = 0;
    for (size_t li = 0; li < levels.size(); ++li) {
      std::string& o = shape_json_[li];
      for (size_t k = 0; k < per_level[li]; ++k, ++next) {
        const JobSpec& spec = shapes[next];
        const auto& answer = answers[next];
        // Now, on the GPUs free now (the Placer, reservations aside), and when (the core's
        // what-if: reservations kept, the job behind every pending one).
        const PlaceOutcome out = core.placer().Place(spec.shape);
        if (k > 0) o += ',';
        o += "{\"gpus\":" + std::to_string(spec.shape.gpus) + ",\"status\":\"" +
             std::string(PlaceStatusName(out.status)) + "\"";
        if (out.status == PlaceStatus::kPlaced) o += ",\"busbw_gbs\":" + Num(out.placement.prediction.busbw_gbs);
        if (!out.reason.empty()) o += ",\"reason\":" + JsonQuote(out.reason);
        if (answer) {
          o += ",\"start_s\":" + (answer->start == kForever ? std::string("null") : std::to_string(answer->start));
          o += ",\"promised\":" + std::string(answer->promised ? "true" : "false");
          if (answer->wait != WaitKind::kNone) o += ",\"wait\":\"" + std::string(WaitKindName(answer->wait)) + "\"";
          if (!answer->reason.empty()) o += ",\"why\":" + JsonQuote(answer->reason);
        } else {
          o += ",\"start_s\":null,\"why\":" + JsonQuote(answer.error().ToString());
        }
        o += "}";
      }
    }
    const auto done = std::chrono::steady_clock::now();
    next_answers_ = done + 9 * (done - steady);
    answers_at_ = core.now();
    answers_ms_ = std::chrono::duration<double, std::milli>(done - steady).count();
    placeable_version_ = version;
    placeable_stale_ = false;
  }
  std::string o = "{\"now\":" + std::to_string(core.now()) + ",\"answers_at\":" + std::to_string(answers_at_) +
                  ",\"answers_ms\":" + Num(answers_ms_) + ",\"levels\":[";
  for (size_t li = 0; li < levels.size(); ++li) {
    const LevelInfo& info = levels[li];
    if (li > 0) o += ',';
    o += "{\"level\":\"" + std::string(LevelName(info.level)) + "\",\"domains\":" + std::to_string(info.domains) +
         ",\"domain_gpus\":" + std::to_string(info.domain_gpus) +
         ",\"largest_free_block\":" + std::to_string(largest[static_cast<int>(info.level)]) + ",\"free_blocks\":[";
    bool first = true;
    for (const auto& [free, count] : info.by_free) {
      if (!first) o += ',';
      first = false;
      o += "[" + std::to_string(free) + "," + std::to_string(count) + "]";
    }
    o += "],\"shapes\":[" + shape_json_[li] + "]}";
  }
  return o + "]}";
}

std::string Dashboard::SamplesJson(int64_t since) const {
  std::string o = "{\"interval_s\":" + Num(options_.sample_interval_s) +
                  ",\"history\":" + (has_history_ ? "true" : "false") + ",\"samples\":[";
  bool first = true;
  for (const Sample& s : samples_) {
    if (s.time < since) continue;
    if (!first) o += ',';
    first = false;
    o += SampleJson(s);
  }
  return o + "]}";
}

std::string Dashboard::JobEventsJson(JobId id) const {
  const JobRecord* job = controller_->core().job(id);
  std::vector<Event> stored;
  const std::vector<Event>* events = nullptr;
  if (store_ != nullptr) {
    // The store's history: every committed event of the job (the Controller publishes an
    // event only after its commit), also from before this phalanxd started.
    auto rows = store_->ReadJobEvents(id);
    if (rows) {
      for (store::StoredEvent& r : *rows) stored.push_back(Event{r.time, std::move(r.kind), Readable(r.payload)});
      events = &stored;
    } else {
      PHX_LOG(kWarn) << "dashboard: " << rows.error().ToString() << " (showing the events since the start)";
    }
  }
  if (events == nullptr) {
    if (auto it = history_.find(id); it != history_.end()) events = &it->second;
  }
  if (job == nullptr && (events == nullptr || events->empty())) return "";
  std::string o = "{\"job_id\":" + std::to_string(id) + ",\"events\":[";
  bool first = true;
  const auto add = [&](Time t, std::string_view kind, const std::string& detail) {
    if (!first) o += ',';
    first = false;
    o += "{\"time\":" + std::to_string(t) + ",\"kind\":" + JsonQuote(kind) + ",\"detail\":" + JsonQuote(detail) + "}";
  };
  // A job whose submit is not recorded (submitted before this phalanxd started, without a
  // store): say when it was.
  if (job != nullptr && (events == nullptr || events->empty() || events->front().kind != "submit"))
    add(job->spec.submit, "submit", events == nullptr || events->empty() ? "before this phalanxd started" : "");
  if (events != nullptr) {
    for (const Event& e : *events) add(e.time, e.kind, e.detail);
  }
  return o + "]}";
}

void Dashboard::AddRoutes(h::Router& router, const ViewerOf& viewer, std::vector<Status>* added) {
  // Whether the store's history is served (/api/v1/history): the page reads it, when it is,
  // instead of the samples kept here. A method no route has: 405 when the path exists, and no
  // handler runs.
  h::Request probe;
  probe.method = "OPTIONS";
  probe.target = probe.path = "/api/v1/history";
  probe.headers.emplace("host", "localhost");
  has_history_ = router.Handle(probe).status != 404;
  added->push_back(router.Get(
      "/", [](const h::Request& r, const h::PathParams&) { return Asset(r, *web::FindWebAsset("index.html")); }));
  added->push_back(router.Get("/static/{name}", [](const h::Request& r, const h::PathParams& p) {
    const web::WebAsset* a = web::FindWebAsset(p.at("name"));
    if (a == nullptr) return h::ErrorResponse(404, "no static file '" + p.at("name") + "'");
    return Asset(r, *a);
  }));
  added->push_back(
      router.Get("/api/v1/map", [this](const h::Request&, const h::PathParams&) { return Json(MapJson()); }));
  added->push_back(router.Get("/api/v1/placeable",
                              [this](const h::Request&, const h::PathParams&) { return Json(PlaceableJson()); }));
  added->push_back(router.Get("/api/v1/samples", [this](const h::Request& r, const h::PathParams&) {
    int64_t since = 0;
    if (auto s = r.QueryValue("since")) {
      auto v = ParseNumber<int64_t>(*s);
      if (!v) return h::ErrorResponse(400, "since: '" + *s + "' is not an integer (seconds since the epoch)");
      since = *v;
    }
    return Json(SamplesJson(since));
  }));
  added->push_back(router.Get("/api/v1/jobs/{id}/events", [this, viewer](const h::Request& r, const h::PathParams& p) {
    auto id = ParseNumber<uint64_t>(p.at("id"));
    if (!id) return h::ErrorResponse(400, "id: '" + p.at("id") + "' is not an unsigned integer");
    // A job the reader may not see (private_data: jobs) is as absent as one that never was.
    const JobRecord* job = controller_->core().job(*id);
    if (job != nullptr && ViewOf(controller_->private_data(), viewer(r), job->spec.user) == JobView::kHidden)
      return h::ErrorResponse(404, "job " + p.at("id") + ": no such job");
    std::string body = JobEventsJson(*id);
    if (body.empty()) return h::ErrorResponse(404, "job " + p.at("id") + ": no such job");
    return Json(std::move(body));
  }));
  added->push_back(router.Get("/api/v1/events", [this, viewer](const h::Request& req, const h::PathParams&) {
    h::Response r;
    r.stream = [this, who = viewer(req)](std::shared_ptr<h::EventStream> s) {
      if (!samples_.empty()) s->Send("sample", SampleJson(samples_.back()));
      streams_.push_back(s);
      controller_->Watch(WatchFilter{}, std::make_shared<SseSink>(controller_, who, std::move(s)));
    };
    return r;
  }));
}

}  // namespace phalanx::service
