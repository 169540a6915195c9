// A test program for the shell tests (curl_test.sh, promtool_test.sh):
//   http_test_server serve PORT_FILE   serves on 127.0.0.1:0 and writes the port to PORT_FILE;
//                                      stops on SIGTERM/SIGINT, GET /quit, or after 120 s
//   http_test_server get PORT TARGET   GETs http://127.0.0.1:PORT/TARGET with the Beast test
//                                      client; prints the body; exits 1 unless the status is 200
// The server has /healthz, /echo (GET: method, path, query; POST: body size), /api/v1/jobs/{id}
// (JSON of an API message) and /metrics: a registry with every metric type, labels whose values
// need escaping, and a collector.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "phalanx/v1/phalanx.pb.h"
#include "service/http/metrics.h"
#include "service/http/responses.h"
#include "service/http/router.h"
#include "service/http/server.h"
#include "test_client.h"

namespace phalanx::http {
namespace {

void Check(const Status& s) {
  if (!s) {
    std::cerr << "http_test_server: " << s.error().ToString() << "\n";
    std::exit(1);
  }
}
template <typename T>
T* Check(Result<T*> r) {
  if (!r) Check(Status(std::unexpected(r.error())));
  return *r;
}

void FillRegistry(MetricsRegistry& registry) {
  Check(registry.AddCounter("phalanx_submissions_total", "Jobs submitted since start."))->WithLabels({}).Inc(12);
  auto* decisions = Check(registry.AddCounter("phalanx_decisions_total", "Scheduling decisions by kind.", {"kind"}));
  decisions->WithLabels({"start"}).Inc(9);
  decisions->WithLabels({"preempt"}).Inc(2);
  auto* jobs = Check(registry.AddGauge("phalanx_jobs", "Jobs by state.", {"state"}));
  auto* gpus = Check(registry.AddGauge("phalanx_gpus", "GPUs by state.", {"state"}));
  auto* blocks = Check(
      registry.AddGauge("phalanx_free_block_gpus", "Largest free GPU block inside one domain, by level.", {"level"}));
  Check(registry.AddGauge("phalanx_fragmentation_fgd",
                          "Shape-aware fragmentation (\"FGD\"), 0..1;\nsee docs\\simulator.md."))
      ->WithLabels({})
      .Set(0.1875);
  auto* odd = Check(registry.AddGauge("phalanx_test_label_escaping", "Label values that need escaping.", {"value"}));
  odd->WithLabels({"back\\slash"}).Set(1);
  odd->WithLabels({"double\"quote"}).Set(2);
  odd->WithLabels({"new\nline"}).Set(3);
  odd->WithLabels({"not utf-8: \xff\xfe"}).Set(4);
  odd->WithLabels({"utf-8: \xc3\xa9\xe2\x82\xac"}).Set(5);
  odd->WithLabels({""}).Set(-1.5e-9);
  auto* pass = Check(registry.AddHistogram("phalanx_schedule_pass_seconds", "Duration of one scheduling pass.", {},
                                           ExponentialBuckets(0.0001, 10, 5)));
  for (double v : {0.00005, 0.002, 0.002, 0.3, 12.0}) pass->WithLabels({}).Observe(v);
  auto* wait = Check(registry.AddHistogram("phalanx_job_wait_seconds", "Seconds from submission to start.", {"class"},
                                           {1, 60, 600, 3600}));
  wait->WithLabels({"normal"}).Observe(30);
  wait->WithLabels({"high"}).Observe(0.5);
  int scrapes = 0;
  registry.AddCollector([=]() mutable {
    ++scrapes;
    jobs->Clear();
    jobs->WithLabels({"pending"}).Set(3);
    jobs->WithLabels({"running"}).Set(scrapes);
    gpus->WithLabels({"allocated"}).Set(24);
    gpus->WithLabels({"free"}).Set(40);
    gpus->WithLabels({"unavailable"}).Set(0);
    for (const char* level : {"node", "leaf", "spine"}) blocks->WithLabels({level}).Set(8);
  });
}

int Serve(const std::string& port_file) {
  boost::asio::io_context io;
  MetricsRegistry registry;
  FillRegistry(registry);
  std::unique_ptr<Server> server;
  boost::asio::signal_set signals(io, SIGTERM, SIGINT);
  boost::asio::steady_timer deadline(io, std::chrono::seconds(120));
  auto stop = [&] {
    server->Stop();
    signals.cancel();
    deadline.cancel();
  };
  Router router;
  Check(router.Get("/healthz", [](const Request&, const PathParams&) { return TextResponse(200, "ok\n"); }));
  Check(router.Get("/metrics", [&registry](const Request&, const PathParams&) { return MetricsResponse(registry); }));
  Check(router.Get("/echo", [](const Request& r, const PathParams&) {
    std::string out = r.method + " " + r.path;
    for (const auto& [k, v] : r.query) out += " " + k + "=" + v;
    return TextResponse(200, out + "\n");
  }));
  Check(router.Post("/echo", [](const Request& r, const PathParams&) {
    return TextResponse(200, "got " + std::to_string(r.body.size()) + " bytes\n");
  }));
  Check(router.Get("/api/v1/jobs/{id}", [](const Request&, const PathParams& p) {
    v1::Job job;
    job.set_id(std::stoull(p.at("id")));
    job.set_state(v1::JOB_STATE_PENDING);
    job.set_reason("Resources");
    return JsonResponse(job);
  }));
  Check(router.Get("/quit", [&](const Request&, const PathParams&) {
    boost::asio::post(io, stop);
    return TextResponse(200, "bye\n");
  }));
  auto started = Server::Start(io, "127.0.0.1", 0, std::move(router).ToHandler());
  if (!started) Check(Status(std::unexpected(started.error())));
  server = std::move(*started);

  signals.async_wait([&](boost::system::error_code ec, int) {
    if (!ec) stop();
  });
  deadline.async_wait([&](boost::system::error_code ec) {
    if (!ec) stop();
  });
  {
    std::string tmp = port_file + ".tmp";
    std::ofstream(tmp) << server->port() << "\n";
    std::rename(tmp.c_str(), port_file.c_str());  // the script never sees half a file
  }
  io.run();
  return 0;
}

int Get(const std::string& port, const std::string& target) {
  auto response = testing::HttpGet("127.0.0.1", static_cast<uint16_t>(std::stoi(port)), target);
  if (!response) {
    std::cerr << "http_test_server: " << response.error().ToString() << "\n";
    return 1;
  }
  std::cout << response->body();
  if (response->result_int() != 200) {
    std::cerr << "http_test_server: status " << response->result_int() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace phalanx::http

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "serve" && argc == 3) return phalanx::http::Serve(argv[2]);
  if (mode == "get" && argc == 4) return phalanx::http::Get(argv[2], argv[3]);
  std::cerr << "usage: http_test_server serve PORT_FILE | get PORT TARGET\n";
  return 2;
}
