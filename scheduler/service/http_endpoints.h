// HttpEndpoints: phalanxd's read-only HTTP side (docs/http.md is the contract): /healthz,
// /metrics (Prometheus; gauges set from the core by a collector at scrape time) and
// /api/v1/{jobs,jobs/{id},nodes,stats,fragmentation,topology} as the API's JSON. Handlers
// run on the io thread and answer from the Controller through api_views.h (the same answers
// as gRPC, for an anonymous caller: never a job's environment); the web page at / with its
// endpoints and event stream (dashboard.h).
// Thread-safety: Start, Stop and every handler on the io thread. The observer functions it
// gives the Controller run on the io thread too.
#pragma once

#include <boost/asio/io_context.hpp>

#include <memory>
#include <string>

#include "core/common/result.h"
#include "service/controller.h"
#include "service/dashboard.h"
#include "service/http/metrics.h"
#include "service/http/server.h"

namespace phalanx::service {

class HttpEndpoints {
 public:
  // `listen` is "host:port" ("127.0.0.1:9464", "[::1]:0"). Registers the metrics, installs the
  // Controller's observer, starts the server. Errors name the address.
  static Result<std::unique_ptr<HttpEndpoints>> Start(boost::asio::io_context& io, const std::string& listen,
                                                      Controller* controller);
  ~HttpEndpoints();
  void Stop();
  uint16_t port() const { return server_ ? server_->port() : 0; }

 private:
  HttpEndpoints() = default;
  Status RegisterMetrics();

  Controller* controller_ = nullptr;
  http::MetricsRegistry metrics_;
  http::GaugeFamily* jobs_ = nullptr;
  http::GaugeFamily* gpus_ = nullptr;
  http::GaugeFamily* free_block_ = nullptr;
  http::GaugeFamily* whole_free_ = nullptr;
  http::GaugeFamily* fgd_ = nullptr;
  http::GaugeFamily* agents_ = nullptr;
  http::HistogramFamily* pass_ = nullptr;
  http::HistogramFamily* wait_ = nullptr;
  http::CounterFamily* decisions_ = nullptr;
  http::CounterFamily* submissions_ = nullptr;
  http::CounterFamily* requests_ = nullptr;
  std::unique_ptr<Dashboard> dashboard_;  // the web page at / and its endpoints (dashboard.h)
  std::unique_ptr<http::Server> server_;
};

}  // namespace phalanx::service
