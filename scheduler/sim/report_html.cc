// FormatHtml: the report's page. Its charts are drawn in the browser by the dashboard's chart
// module (scheduler/web/chart.js, inlined: the same code as phalanxd's live page), from the
// runs' series inlined as data: round ticks, time axes in s/min/h/d, rolling means with a
// min-max band for the noisy series (queue, FGD), a unit on every axis. Deterministic: the same
// runs give the same bytes.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "sim/report.h"
#include "util/json.h"
#include "util/strings.h"
#include "web/web_assets.h"

namespace phalanx {
namespace {

std::string Num(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s == "-0" ? "0" : s;
}

// A JSON string that is also safe inside <script> ("</" cannot end it).
std::string Js(std::string_view s) {
  std::string out;
  for (char c : JsonQuote(s)) {
    if (c == '<') out += "\\u003c";
    else out += c;
  }
  return out;
}

constexpr const char* kLineColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};

// At most `max` points, evenly picked (first and last kept; deterministic).
template <typename T>
std::vector<T> Thin(const std::vector<T>& p, size_t max) {
  if (p.size() <= max) return p;
  std::vector<T> out;
  for (size_t i = 0; i < max; ++i) out.push_back(p[i * (p.size() - 1) / (max - 1)]);
  return out;
}

struct ChartLine {
  std::string name, color;
  std::vector<std::pair<double, double>> points;
  int window = 1;  // > 1: rolling mean over this many points, with a min-max band
  bool dashed = false;
};

std::string LineSpec(const std::string& title, const std::string& x, const std::string& y,
                     const std::vector<ChartLine>& lines) {
  std::string o = "{title:" + Js(title) + ",x:" + x + ",y:" + y + ",width:640,height:300,series:[";
  for (size_t k = 0; k < lines.size(); ++k) {
    const ChartLine& l = lines[k];
    if (k > 0) o += ",";
    o += "{name:" + Js(l.name) + ",color:" + Js(l.color) + ",window:" + std::to_string(l.window) +
         (l.dashed ? ",dashed:true" : "") + ",points:[";
    bool first = true;
    for (auto [px, py] : Thin(l.points, 2000)) {
      if (!first) o += ",";
      first = false;
      o += "[" + Num(px, 1) + "," + Num(py, 4) + "]";
    }
    o += "]}";
  }
  return o + "]}";
}

}  // namespace

std::string FormatHtml(const ReportInfo& info, const std::vector<PolicyRun>& runs) {
  std::vector<ChartLine> util, queue, frag, block, cdf;
  std::string bars = "[";
  for (size_t k = 0; k < runs.size(); ++k) {
    const SimResult& r = runs[k].result;
    const std::string color = kLineColors[k % std::size(kLineColors)];
    const double g = r.cluster_gpus ? r.cluster_gpus : 1;
    ChartLine u{r.policy, color, {}}, q{r.policy, color, {}, 15}, f{r.policy, color, {}, 25}, b{r.policy, color, {}};
    // The largest free block one level above the node (leaf or rack), the level jobs spread over.
    int level = static_cast<int>(Level::kNode);
    for (int l = static_cast<int>(Level::kNvlDomain); l < kLevelCount - 1 && !r.series.empty(); ++l) {
      if (r.series.front().largest_free[l] > 0) {
        level = l;
        break;
      }
    }
    b.name = r.policy + " (" + std::string(LevelName(static_cast<Level>(level))) + ")";
    for (const Sample& s : r.series) {
      const double t = static_cast<double>(s.t);
      u.points.push_back({t, 100 * s.busy_gpus / g});
      q.points.push_back({t, static_cast<double>(s.pending_jobs)});
      f.points.push_back({t, 100 * (s.free_gpus > 0 ? s.frag_gpus / s.free_gpus : 0)});
      b.points.push_back({t, static_cast<double>(s.largest_free[level])});
    }
    util.push_back(std::move(u));
    if (k == 0) {
      ChartLine off{"offered load", "#555", {}, 1, true};
      const std::vector<double> o = OfferedLoad(r.jobs, r.series, r.cluster_gpus);
      for (size_t i = 0; i < o.size(); ++i) off.points.push_back({static_cast<double>(r.series[i].t), 100 * o[i]});
      util.push_back(std::move(off));
    }
    queue.push_back(std::move(q));
    frag.push_back(std::move(f));
    block.push_back(std::move(b));
    std::vector<double> jct;
    for (const JobOutcome& j : r.jobs) {
      if (j.finished()) jct.push_back(static_cast<double>(std::max<Duration>(j.jct(), 1)));
    }
    std::sort(jct.begin(), jct.end());
    ChartLine c{r.policy, color, {}};
    for (size_t i = 0; i < jct.size(); ++i) {
      if (i + 1 < jct.size() && jct[i + 1] == jct[i]) continue;
      c.points.push_back({jct[i], 100.0 * static_cast<double>(i + 1) / static_cast<double>(jct.size())});
    }
    cdf.push_back(std::move(c));
    if (k > 0) bars += ",";
    bars += "{name:" + Js(r.policy) + ",color:" + Js(color) + ",values:[";
    for (size_t i = 0; i < runs[k].summary.wait_by_size.size(); ++i)
      bars += (i ? "," : "") + Num(runs[k].summary.wait_by_size[i].avg_wait, 1);
    bars += "]}";
  }
  bars += "]";
  std::string labels = "[";
  for (const SizeBucket& b : DefaultSizeBuckets()) labels += (labels.size() > 1 ? "," : "") + Js(b.label);
  labels += "]";

  const std::string simx = "{kind:'duration',label:'simulated time'}";
  const std::vector<std::pair<std::string, std::string>> charts = {
      {"utilization", "line(" +
                          LineSpec("GPU utilization vs offered load", simx,
                                   "{label:'GPUs busy',unit:'% of the cluster',min:0,max:150,cap:true}", util) +
                          ")"},
      {"queue", "line(" + LineSpec("Queue length", simx, "{label:'pending jobs',unit:'jobs',min:0}", queue) + ")"},
      {"fragmentation", "line(" +
                            LineSpec("Fragmentation (FGD-style)", simx,
                                     "{label:'idle GPUs no job shape can use',unit:'%',min:0,max:100}", frag) +
                            ")"},
      {"largest_free",
       "line(" + LineSpec("Largest free block", simx, "{label:'largest free block',unit:'GPUs',min:0}", block) + ")"},
      {"jct_cdf", "line(" +
                      LineSpec("JCT CDF", "{kind:'logduration',label:'job completion time'}",
                               "{label:'jobs finished within',unit:'%',min:0,max:100}", cdf) +
                      ")"},
      {"wait_by_size", "bars({title:'Average wait by job size',width:640,height:300,labels:" + labels + ",series:" +
                           bars + ",x:{label:'job size (GPUs)'},y:{label:'average wait',kind:'duration'}})"},
  };
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Phalanx simulation: " << HtmlEscape(info.trace)
    << "</title>\n"
    << "<style>body{font-family:sans-serif;max-width:1340px;margin:20px auto;color:#222}"
       "pre{background:#f6f6f6;padding:10px;font-size:12px}figure{display:inline-block;margin:6px;width:640px}"
       "figure svg{width:100%;height:auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px "
       "8px;text-align:right}</style></head><body>\n";
  o << "<h1>Phalanx trace simulation</h1>\n<p>Trace <b>" << HtmlEscape(info.trace) << "</b> (" << info.jobs
    << " jobs) on <b>" << HtmlEscape(info.topology) << "</b> (" << info.gpus << " GPUs). " << HtmlEscape(info.settings)
    << "</p>\n";
  o << "<h2>Summary</h2>\n<pre>" << HtmlEscape(FormatTable(info, runs)) << "</pre>\n";
  o << "<h2>Over time</h2>\n";
  for (size_t i = 0; i < charts.size(); ++i) {
    if (i == 4) o << "<h2>Jobs</h2>\n";
    o << "<figure id=\"" << charts[i].first << "\"></figure>\n";
  }
  o << "<noscript><p>The charts need JavaScript; the same plots are written as SVG files beside this "
       "page.</p></noscript>\n";
  o << "<p>Definitions: docs/simulator.md. Generated by <code>phalanx sim</code>; charts by the dashboard's "
       "chart module (scheduler/web/chart.js).</p>\n";
  const web::WebAsset* chart = web::FindWebAsset("chart.js");
  o << "<script>\n" << (chart ? chart->body : std::string_view("")) << "\n</script>\n<script>\n";
  for (const auto& [id, call] : charts) {
    // "line(SPEC)" -> PhxChart.line(document.getElementById(ID), SPEC)
    const size_t paren = call.find('(');
    o << "PhxChart." << call.substr(0, paren) << "(document.getElementById('" << id << "'), " << call.substr(paren + 1)
      << ";\n";
  }
  o << "</script>\n</body></html>\n";
  return o.str();
}

}  // namespace phalanx
