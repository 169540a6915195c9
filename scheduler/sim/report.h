// Reports of simulated runs, one or several policies side by side: a text table (stdout), a
// JSON summary, CSV time series, standalone SVG plots, and a self-contained HTML page whose
// charts (utilization vs offered load, queue length, fragmentation over time, largest free
// block, JCT CDF, wait by size) are drawn by the dashboard's chart module, inlined
// (scheduler/web/chart.js, report_html.cc).
// Every output is a pure function of the runs: same runs -> same bytes (run times appear only
// in the table, and only when given).
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "sim/metrics.h"
#include "sim/simulator.h"

namespace phalanx {

struct PolicyRun {
  SimResult result;
  Summary summary;
  double wall_s = -1;  // measured by the caller; < 0: unknown (not printed)
};

struct ReportInfo {
  std::string trace;     // file name
  std::string topology;  // file name or gen:NAME
  std::string settings;  // one line: walltime model, rules, seed...
  size_t jobs = 0;
  uint32_t gpus = 0;
};

std::string FormatTable(const ReportInfo& info, const std::vector<PolicyRun>& runs);
std::string FormatJson(const ReportInfo& info, const std::vector<PolicyRun>& runs);
// Long format, one row per policy and sample: policy,t,busy_gpus,utilization,offered_load,...
std::string FormatCsv(const std::vector<PolicyRun>& runs);
// One row per policy and job: policy,job_id,gpus,submit_s,start_s,end_s,wait_s,jct_s,state,...
std::string FormatJobsCsv(const std::vector<PolicyRun>& runs);
std::string FormatHtml(const ReportInfo& info, const std::vector<PolicyRun>& runs);
// The HTML page's plots as standalone SVG documents: (file stem, SVG text), e.g.
// ("utilization", "<svg ...>"): utilization, queue, fragmentation, largest_free, jct_cdf, wait_by_size.
std::vector<std::pair<std::string, std::string>> FormatPlots(const std::vector<PolicyRun>& runs);

// "45s", "12.5m", "3.20h", "2.10d": seconds for people.
std::string HumanSeconds(double s);

}  // namespace phalanx
