// HttpEndpoints: phalanxd's read-only HTTP side (docs/http.md is the contract): /healthz,
// /metrics (Prometheus; gauges set from one ClusterSnapshot of the core by a collector at
// scrape time), /api/v1/{jobs,jobs/{id},nodes,stats,fragmentation,topology} as the API's JSON
// and /api/v1/history (the sampled series in the store; docs/monitoring.md). Handlers
// run on the io thread and answer from the Controller through api_views.h (the same answers
// as gRPC). Every route sits behind an http::RequestGuard (Host and Origin checks, the admin
// token): a request with the admin token reads as an admin, any other as an anonymous
// reader (jobs with their private fields redacted, never an environment); the web page at /
// with its endpoints and event stream (dashboard.h) is behind the same guard.
// Thread-safety: Start, Stop and every handler on the io thread. The observer functions it
// gives the Controller run on the io thread too.
#pragma once

#include <boost/asio/io_context.hpp>

#include <memory>
#include <string>

#include "adapters/store/store.h"
#include "core/common/result.h"
#include "service/cluster_snapshot.h"
#include "service/controller.h"
#include "service/dashboard.h"
#include "service/http/guard.h"
#include "service/http/metrics.h"
#include "service/http/server.h"

namespace phalanx::service {

class HttpEndpoints {
 public:
  // `listen` is "host:port" ("127.0.0.1:9464", "[::1]:0"). Registers the metrics, installs the
  // Controller's observer, starts the server. Errors name the address.
  // `access`: the admin token and the Host names and Origins allowed besides the defaults
  // (http::DefaultAllowedHosts of the listen address).
  static Result<std::unique_ptr<HttpEndpoints>> Start(boost::asio::io_context& io, const std::string& listen,
                                                      Controller* controller, http::GuardOptions access = {});
  ~HttpEndpoints();
  void Stop();
  uint16_t port() const { return server_ ? server_->port() : 0; }
  // The store GET /api/v1/history reads (a read connection used on the io thread); without
  // one it answers 503. The dashboard's job pages read their events from it too.
  void set_history(store::Store* reader);

 private:
  HttpEndpoints() = default;
  Status RegisterMetrics();
  void Collect();  // the scrape's collector: one ClusterSnapshot into the gauges
  http::Response History(const http::Request& r) const;

  // Who is asking: an admin with the token, else nobody in particular.
  Caller Viewer(const http::Request& r) const;

  Controller* controller_ = nullptr;
  std::unique_ptr<http::RequestGuard> guard_;
  store::Store* history_ = nullptr;
  std::unique_ptr<BestBusbw> best_;
  std::map<JobId, Time> first_predicted_;
  std::map<JobId, std::pair<uint32_t, double>> last_losses_;
  bool have_losses_ = false;
  http::MetricsRegistry metrics_;
  http::GaugeFamily* jobs_ = nullptr;
  http::GaugeFamily* gpus_ = nullptr;
  http::GaugeFamily* nodes_ = nullptr;
  http::GaugeFamily* queue_ = nullptr;
  http::GaugeFamily* frag_level_ = nullptr;
  http::GaugeFamily* efficiency_ = nullptr;
  http::GaugeFamily* user_gpus_ = nullptr;
  http::GaugeFamily* account_gpus_ = nullptr;
  http::GaugeFamily* overdue_ = nullptr;
  http::GaugeFamily* free_block_ = nullptr;
  http::GaugeFamily* whole_free_ = nullptr;
  http::GaugeFamily* fgd_ = nullptr;
  http::GaugeFamily* agents_ = nullptr;
  http::GaugeFamily* store_free_ = nullptr;  // the store's file system (store.min_free)
  http::GaugeFamily* store_low_ = nullptr;
  http::HistogramFamily* pass_ = nullptr;
  http::HistogramFamily* wait_ = nullptr;
  http::CounterFamily* decisions_ = nullptr;
  http::CounterFamily* submissions_ = nullptr;
  http::CounterFamily* requests_ = nullptr;
  http::CounterFamily* preemptions_ = nullptr;
  http::CounterFamily* lost_gpu_s_ = nullptr;
  std::unique_ptr<Dashboard> dashboard_;  // the web page at / and its endpoints (dashboard.h)
  std::unique_ptr<http::Server> server_;
};

}  // namespace phalanx::service
