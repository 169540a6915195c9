#include "sim/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "util/json.h"
#include "util/strings.h"

namespace phalanx {
namespace {

std::string F(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// Levels present in the cluster (some sample has a nonzero block there, or the first sample).
std::vector<int> LevelsOf(const std::vector<PolicyRun>& runs) {
  std::vector<int> out;
  for (int l = kLevelCount - 1; l >= static_cast<int>(Level::kNode); --l) {
    bool present = false;
    for (const PolicyRun& r : runs) {
      for (const Sample& s : r.result.series) present = present || s.largest_free[l] > 0;
    }
    if (present) out.push_back(l);
  }
  return out;
}

struct Row {
  std::string name;
  std::vector<std::string> cells;
};

}  // namespace

std::string HumanSeconds(double s) {
  if (s < 120) return F(s, 0) + "s";
  if (s < 7200) return F(s / 60, 1) + "m";
  if (s < 3 * 86400) return F(s / 3600, 2) + "h";
  return F(s / 86400, 2) + "d";
}

std::string FormatTable(const ReportInfo& info, const std::vector<PolicyRun>& runs) {
  std::vector<Row> rows;
  auto add = [&](std::string name, auto cell) {
    Row r{std::move(name), {}};
    for (const PolicyRun& p : runs) r.cells.push_back(cell(p.summary, p));
    rows.push_back(std::move(r));
  };
  using S = const Summary&;
  using P = const PolicyRun&;
  add("jobs finished", [](S s, P) { return std::to_string(s.finished) + "/" + std::to_string(s.jobs); });
  add("avg JCT", [](S s, P) { return HumanSeconds(s.avg_jct); });
  add("p50 JCT", [](S s, P) { return HumanSeconds(s.p50_jct); });
  add("p99 JCT", [](S s, P) { return HumanSeconds(s.p99_jct); });
  add("avg wait", [](S s, P) { return HumanSeconds(s.avg_wait); });
  add("p99 wait", [](S s, P) { return HumanSeconds(s.p99_wait); });
  for (size_t b = 0; b < DefaultSizeBuckets().size(); ++b) {
    bool any = false;
    for (const PolicyRun& p : runs) any = any || p.summary.wait_by_size[b].jobs > 0;
    if (!any) continue;
    const SizeBucket& first = runs.front().summary.wait_by_size[b];
    add("  wait " + first.label + " GPUs (" + std::to_string(first.jobs) + ")",
        [b](S s, P) { return HumanSeconds(s.wait_by_size[b].avg_wait); });
  }
  add("bounded slowdown", [](S s, P) { return F(s.avg_bounded_slowdown, 2); });
  add("makespan", [](S s, P) { return HumanSeconds(s.makespan); });
  add("max wait >=64 GPUs", [](S s, P) { return s.large_jobs ? HumanSeconds(s.max_wait_large) : std::string("-"); });
  add("GPU utilization", [](S s, P) { return F(s.utilization, 3); });
  add("offered load (bound)", [](S s, P) { return F(s.offered_load, 3); });
  add("FGD frag (idle share)", [](S s, P) { return F(s.avg_frag_rate, 3); });
  for (int l : LevelsOf(runs)) {
    add("avg largest free " + std::string(LevelName(static_cast<Level>(l))),
        [l](S s, P) { return F(s.avg_largest_free[l], 1); });
  }
  add("placement efficiency", [](S s, P) { return F(s.placement_eff, 3); });
  add("  static (no traffic)", [](S s, P) { return F(s.placement_eff_static, 3); });
  add("preemptions", [](S s, P) { return std::to_string(s.preemptions); });
  add("ckpt-lost GPU-hours", [](S s, P) { return F(s.ckpt_lost_gpu_h, 1); });
  add("placement-lost GPU-h", [](S s, P) { return F(s.placement_lost_gpu_h, 1); });
  add("preempt-lost GPU-h", [](S s, P) { return F(s.lost_work_gpu_h, 1); });
  add("preempt-overhead GPU-h", [](S s, P) { return F(s.overhead_gpu_h, 1); });
  add("resizes", [](S s, P) { return std::to_string(s.resizes); });
  add("killed / never started",
      [](S s, P) { return std::to_string(s.killed) + " / " + std::to_string(s.never_started); });
  add("scheduling passes", [](S s, P) { return std::to_string(s.passes); });
  bool timed = false;
  for (const PolicyRun& p : runs) timed = timed || p.wall_s >= 0;
  if (timed) add("run time", [](S, P p) { return p.wall_s >= 0 ? F(p.wall_s, 1) + "s" : std::string("-"); });
  // By job size and by user: sections of the same table.
  auto section = [&](std::string name) { rows.push_back({std::move(name), std::vector<std::string>(runs.size())}); };
  section("by job size: avg/p99/max");
  for (size_t b = 0; b < DefaultSizeBuckets().size(); ++b) {
    bool any = false;
    for (const PolicyRun& p : runs) any = any || p.summary.wait_by_size[b].jobs > 0;
    if (!any) continue;
    const std::string label = runs.front().summary.wait_by_size[b].label;
    add("  wait " + label + " GPUs", [b](S s, P) {
      const SizeBucket& x = s.wait_by_size[b];
      return HumanSeconds(x.avg_wait) + "/" + HumanSeconds(x.p99_wait) + "/" + HumanSeconds(x.max_wait);
    });
    add("  JCT " + label + " GPUs", [b](S s, P) {
      const SizeBucket& x = s.wait_by_size[b];
      if (x.finished == 0) return std::string("-");
      return HumanSeconds(x.avg_jct) + "/" + HumanSeconds(x.p99_jct) + "/" + HumanSeconds(x.max_jct);
    });
  }
  const Summary& first = runs.front().summary;
  section("by user (" + std::to_string(first.users) + "): wait avg/p99/max, bounded slowdown");
  for (size_t i = 0; i < first.by_user.size(); ++i) {
    const UserRow& u = first.by_user[i];
    add("  " + u.user + " (" + F(u.gpu_h, 0) + " GPU-h, " + std::to_string(u.jobs) + " jobs)", [i](S s, P) {
      if (i >= s.by_user.size()) return std::string("-");
      const UserRow& x = s.by_user[i];
      return HumanSeconds(x.avg_wait) + "/" + HumanSeconds(x.p99_wait) + "/" + HumanSeconds(x.max_wait) + ", " +
             (x.finished ? F(x.avg_bounded_slowdown, 2) : std::string("-"));
    });
  }
  add("Jain fairness (slowdown)", [](S s, P) { return F(s.jain_slowdown, 3); });

  size_t w0 = 6;
  for (const Row& r : rows) w0 = std::max(w0, r.name.size());
  std::vector<size_t> w(runs.size());
  for (size_t c = 0; c < runs.size(); ++c) {
    w[c] = runs[c].summary.policy.size();
    for (const Row& r : rows) w[c] = std::max(w[c], r.cells[c].size());
  }
  std::ostringstream out;
  out << "trace " << info.trace << " (" << info.jobs << " jobs) on " << info.topology << " (" << info.gpus
      << " GPUs)\n";
  if (!info.settings.empty()) out << info.settings << "\n";
  auto line = [&](const std::string& name, auto cell) {
    out << name << std::string(w0 - name.size() + 2, ' ');
    for (size_t c = 0; c < runs.size(); ++c) {
      const std::string v = cell(c);
      out << std::string(w[c] - v.size() + (c ? 2 : 0), ' ') << v;
    }
    out << "\n";
  };
  line("metric", [&](size_t c) { return runs[c].summary.policy; });
  size_t total = w0 + 2;
  for (size_t c = 0; c < runs.size(); ++c) total += w[c] + (c ? 2 : 0);
  out << std::string(total, '-') << "\n";
  for (const Row& r : rows) line(r.name, [&](size_t c) { return r.cells[c]; });
  return out.str();
}

std::string FormatJson(const ReportInfo& info, const std::vector<PolicyRun>& runs) {
  std::ostringstream o;
  o << "{\n  \"trace\": " << JsonQuote(info.trace) << ",\n  \"topology\": " << JsonQuote(info.topology)
    << ",\n  \"settings\": " << JsonQuote(info.settings) << ",\n  \"jobs\": " << info.jobs
    << ",\n  \"gpus\": " << info.gpus << ",\n  \"policies\": [";
  for (size_t k = 0; k < runs.size(); ++k) {
    const Summary& s = runs[k].summary;
    const RunCounters& c = runs[k].result.counters;
    o << (k ? "," : "") << "\n    {\n";
    auto kv = [&](const char* key, const std::string& v, bool last = false) {
      o << "      \"" << key << "\": " << v << (last ? "\n" : ",\n");
    };
    kv("policy", JsonQuote(s.policy));
    kv("jobs", std::to_string(s.jobs));
    kv("finished", std::to_string(s.finished));
    kv("unfinished", std::to_string(s.unfinished));
    kv("never_started", std::to_string(s.never_started));
    kv("rejected", std::to_string(s.rejected));
    kv("killed", std::to_string(s.killed));
    kv("avg_jct_s", F(s.avg_jct, 1));
    kv("p50_jct_s", F(s.p50_jct, 1));
    kv("p99_jct_s", F(s.p99_jct, 1));
    kv("avg_wait_s", F(s.avg_wait, 1));
    kv("p50_wait_s", F(s.p50_wait, 1));
    kv("p99_wait_s", F(s.p99_wait, 1));
    kv("avg_bounded_slowdown", F(s.avg_bounded_slowdown, 4));
    kv("makespan_s", F(s.makespan, 0));
    kv("large_jobs", std::to_string(s.large_jobs));
    kv("max_wait_large_s", F(s.max_wait_large, 0));
    kv("utilization", F(s.utilization, 4));
    kv("offered_load", F(s.offered_load, 4));
    kv("avg_frag_rate", F(s.avg_frag_rate, 4));
    kv("avg_frag_gpus", F(s.avg_frag_gpus, 2));
    std::string lf = "{";
    bool first = true;
    for (int l = kLevelCount - 1; l >= 0; --l) {
      if (s.avg_largest_free[l] <= 0) continue;
      lf += std::string(first ? "" : ", ") + JsonQuote(LevelName(static_cast<Level>(l))) + ": " +
            F(s.avg_largest_free[l], 2);
      first = false;
    }
    kv("avg_largest_free", lf + "}");
    kv("placement_efficiency", F(s.placement_eff, 4));
    kv("placement_efficiency_static", F(s.placement_eff_static, 4));
    kv("preemptions", std::to_string(s.preemptions));
    kv("ckpt_lost_gpu_h", F(s.ckpt_lost_gpu_h, 2));
    kv("placement_lost_gpu_h", F(s.placement_lost_gpu_h, 2));
    kv("lost_work_gpu_h", F(s.lost_work_gpu_h, 2));
    kv("overhead_gpu_h", F(s.overhead_gpu_h, 2));
    kv("walltime_extensions", std::to_string(c.walltime_extensions));
    kv("resizes", std::to_string(s.resizes));
    kv("passes", std::to_string(c.passes));
    kv("events", std::to_string(c.events));
    std::string wb = "[";
    for (size_t b = 0; b < s.wait_by_size.size(); ++b) {
      const SizeBucket& x = s.wait_by_size[b];
      wb += std::string(b ? ", " : "") + "{\"gpus\": " + JsonQuote(x.label) + ", \"jobs\": " + std::to_string(x.jobs) +
            ", \"avg_wait_s\": " + F(x.avg_wait, 1) + ", \"max_wait_s\": " + F(x.max_wait, 0) +
            ", \"p99_wait_s\": " + F(x.p99_wait, 0) + ", \"finished\": " + std::to_string(x.finished) +
            ", \"avg_jct_s\": " + F(x.avg_jct, 1) + ", \"p99_jct_s\": " + F(x.p99_jct, 0) +
            ", \"max_jct_s\": " + F(x.max_jct, 0) + "}";
    }
    kv("wait_by_size", wb + "]");
    std::string bu = "[";
    for (size_t i = 0; i < s.by_user.size(); ++i) {
      const UserRow& u = s.by_user[i];
      bu += std::string(i ? ", " : "") + "{\"user\": " + JsonQuote(u.user) + ", \"jobs\": " + std::to_string(u.jobs) +
            ", \"finished\": " + std::to_string(u.finished) + ", \"gpu_h\": " + F(u.gpu_h, 2) +
            ", \"avg_wait_s\": " + F(u.avg_wait, 1) + ", \"p99_wait_s\": " + F(u.p99_wait, 0) +
            ", \"max_wait_s\": " + F(u.max_wait, 0) + ", \"avg_bounded_slowdown\": " + F(u.avg_bounded_slowdown, 4) +
            "}";
    }
    kv("users", std::to_string(s.users));
    kv("by_user", bu + "]");
    kv("jain_slowdown", F(s.jain_slowdown, 4), true);
    o << "    }";
  }
  o << "\n  ]\n}\n";
  return o.str();
}

std::string FormatCsv(const std::vector<PolicyRun>& runs) {
  std::ostringstream o;
  o << "policy,t,busy_gpus,utilization,offered_load,running_jobs,pending_jobs,pending_gpus,free_gpus,frag_gpus";
  for (int l = kLevelCount - 1; l >= static_cast<int>(Level::kGroup); --l)
    o << ",largest_free_" << LevelName(static_cast<Level>(l));
  o << "\n";
  for (const PolicyRun& r : runs) {
    const double g = r.result.cluster_gpus ? r.result.cluster_gpus : 1;
    const std::vector<double> offered = OfferedLoad(r.result.jobs, r.result.series, r.result.cluster_gpus);
    for (size_t i = 0; i < r.result.series.size(); ++i) {
      const Sample& s = r.result.series[i];
      o << r.result.policy << "," << s.t << "," << s.busy_gpus << "," << F(s.busy_gpus / g, 4) << ","
        << F(offered[i], 4) << "," << s.running_jobs << "," << s.pending_jobs << "," << s.pending_gpus << ","
        << s.free_gpus << "," << F(s.frag_gpus, 2);
      for (int l = kLevelCount - 1; l >= static_cast<int>(Level::kGroup); --l) o << "," << s.largest_free[l];
      o << "\n";
    }
  }
  return o.str();
}

std::string FormatJobsCsv(const std::vector<PolicyRun>& runs) {
  std::ostringstream o;
  o << "policy,job_id,gpus,submit_s,duration_s,start_s,end_s,wait_s,jct_s,state,class,elastic,preemptions,resizes,lost_"
       "gpu_s,placement_eff\n";
  for (const PolicyRun& r : runs) {
    for (const JobOutcome& j : r.result.jobs) {
      o << r.result.policy << "," << j.id << "," << j.gpus << "," << j.submit << "," << j.duration << ","
        << j.first_start << "," << j.end << "," << j.wait() << "," << j.jct() << ","
        << (j.rejected ? "rejected" : JobStateName(j.state)) << "," << j.priority_class << "," << (j.elastic ? 1 : 0)
        << "," << j.preemptions << "," << j.resizes << "," << F(j.lost_gpu_s, 0) << ","
        << (j.placement_weight > 0 ? F(j.placement_score / j.placement_weight, 3) : std::string("-")) << "\n";
    }
  }
  return o.str();
}

// ---- HTML with inline SVG ------------------------------------------------------------------

namespace {

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};

struct Series {
  std::string name;
  std::string color;
  bool dashed = false;
  std::vector<std::pair<double, double>> points;
};

// A nice step for about `n` ticks over `span`.
double NiceStep(double span, int n) {
  if (span <= 0) return 1;
  const double raw = span / n;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * mag) return m * mag;
  }
  return 10 * mag;
}

std::string Tick(double v) {
  if (std::fabs(v) >= 1e6) return F(v / 1e6, 1) + "M";
  if (std::fabs(v) >= 1e4) return F(v / 1e3, 0) + "k";
  if (v == std::floor(v)) return F(v, 0);
  return F(v, 2);
}

// Thins a series to at most `max` points (keeps the first and last; deterministic).
std::vector<std::pair<double, double>> Thin(const std::vector<std::pair<double, double>>& p, size_t max) {
  if (p.size() <= max) return p;
  std::vector<std::pair<double, double>> out;
  for (size_t i = 0; i < max; ++i) out.push_back(p[i * (p.size() - 1) / (max - 1)]);
  return out;
}

std::string LineChart(const std::string& title, const std::string& xlabel, const std::string& ylabel,
                      const std::vector<Series>& series, bool logx = false, double ymax_cap = 0) {
  const double W = 640, H = 300, L = 60, R = 150, T = 30, B = 45;
  double x0 = 1e300, x1 = -1e300, y1 = 0;
  for (const Series& s : series) {
    for (auto [x, y] : s.points) {
      const double xv = logx ? std::log10(std::max(x, 1.0)) : x;
      x0 = std::min(x0, xv);
      x1 = std::max(x1, xv);
      y1 = std::max(y1, y);
    }
  }
  if (x0 > x1) x0 = 0, x1 = 1;
  if (x1 == x0) x1 = x0 + 1;
  if (ymax_cap > 0) y1 = std::min(y1, ymax_cap);
  if (y1 <= 0) y1 = 1;
  const double ystep = NiceStep(y1, 5);
  y1 = std::ceil(y1 / ystep) * ystep;
  auto X = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  auto Y = [&](double y) { return T + (1 - std::min(y, y1) / y1) * (H - T - B); };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W
    << " " << H << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  o << "<text x=\"" << W / 2 - R / 2 << "\" y=\"18\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">"
    << HtmlEscape(title) << "</text>\n";
  o << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << W - L - R << "\" height=\"" << H - T - B
    << "\" fill=\"none\" stroke=\"#999\"/>\n";
  for (double y = 0; y <= y1 + 1e-9; y += ystep) {
    o << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << F(Y(y), 1) << "\" y2=\"" << F(Y(y), 1)
      << "\" stroke=\"#eee\"/>";
    o << "<text x=\"" << L - 4 << "\" y=\"" << F(Y(y) + 4, 1) << "\" text-anchor=\"end\">" << Tick(y) << "</text>\n";
  }
  if (logx) {
    for (double e = std::floor(x0); e <= x1 + 1e-9; e += 1) {
      if (e < x0) continue;
      o << "<text x=\"" << F(X(e), 1) << "\" y=\"" << H - B + 15 << "\" text-anchor=\"middle\">"
        << HumanSeconds(std::pow(10, e)) << "</text>";
      o << "<line x1=\"" << F(X(e), 1) << "\" x2=\"" << F(X(e), 1) << "\" y1=\"" << T << "\" y2=\"" << H - B
        << "\" stroke=\"#eee\"/>\n";
    }
  } else {
    const double xstep = NiceStep(x1 - x0, 6);
    for (double x = std::ceil(x0 / xstep) * xstep; x <= x1 + 1e-9; x += xstep) {
      o << "<text x=\"" << F(X(x), 1) << "\" y=\"" << H - B + 15 << "\" text-anchor=\"middle\">" << Tick(x)
        << "</text>\n";
    }
  }
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 8 << "\" text-anchor=\"middle\">" << HtmlEscape(xlabel)
    << "</text>\n";
  o << "<text transform=\"translate(14," << (T + H - B) / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
    << HtmlEscape(ylabel) << "</text>\n";
  for (size_t k = 0; k < series.size(); ++k) {
    const Series& s = series[k];
    o << "<polyline fill=\"none\" stroke=\"" << s.color << "\" stroke-width=\"1.5\""
      << (s.dashed ? " stroke-dasharray=\"5,3\"" : "") << " points=\"";
    for (auto [x, y] : Thin(s.points, 800))
      o << F(X(logx ? std::log10(std::max(x, 1.0)) : x), 1) << "," << F(Y(y), 1) << " ";
    o << "\"/>\n";
    const double ly = T + 10 + 16 * static_cast<double>(k);
    o << "<line x1=\"" << W - R + 10 << "\" x2=\"" << W - R + 30 << "\" y1=\"" << ly << "\" y2=\"" << ly
      << "\" stroke=\"" << s.color << "\" stroke-width=\"2\"" << (s.dashed ? " stroke-dasharray=\"5,3\"" : "") << "/>";
    o << "<text x=\"" << W - R + 34 << "\" y=\"" << ly + 4 << "\">" << HtmlEscape(s.name) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

std::string BarChart(const std::string& title, const std::vector<std::string>& groups,
                     const std::vector<Series>& series) {
  const double W = 640, H = 300, L = 60, R = 150, T = 30, B = 45;
  double y1 = 0;
  for (const Series& s : series) {
    for (auto [x, y] : s.points) y1 = std::max(y1, y);
  }
  if (y1 <= 0) y1 = 1;
  const double ystep = NiceStep(y1, 5);
  y1 = std::ceil(y1 / ystep) * ystep;
  auto Y = [&](double y) { return T + (1 - y / y1) * (H - T - B); };
  const double gw = (W - L - R) / std::max<size_t>(groups.size(), 1);
  const double bw = gw * 0.8 / std::max<size_t>(series.size(), 1);
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  o << "<text x=\"" << W / 2 - R / 2 << "\" y=\"18\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">"
    << HtmlEscape(title) << "</text>\n";
  for (double y = 0; y <= y1 + 1e-9; y += ystep) {
    o << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << F(Y(y), 1) << "\" y2=\"" << F(Y(y), 1)
      << "\" stroke=\"#eee\"/>";
    o << "<text x=\"" << L - 4 << "\" y=\"" << F(Y(y) + 4, 1) << "\" text-anchor=\"end\">" << HumanSeconds(y)
      << "</text>\n";
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    o << "<text x=\"" << F(L + gw * (static_cast<double>(g) + 0.5), 1) << "\" y=\"" << H - B + 15
      << "\" text-anchor=\"middle\">" << HtmlEscape(groups[g]) << "</text>\n";
    for (size_t k = 0; k < series.size(); ++k) {
      const double y = g < series[k].points.size() ? series[k].points[g].second : 0;
      const double x = L + gw * static_cast<double>(g) + gw * 0.1 + bw * static_cast<double>(k);
      o << "<rect x=\"" << F(x, 1) << "\" y=\"" << F(Y(y), 1) << "\" width=\"" << F(bw, 1) << "\" height=\""
        << F(H - B - Y(y), 1) << "\" fill=\"" << series[k].color << "\"><title>" << HtmlEscape(series[k].name) << " "
        << HtmlEscape(groups[g]) << ": " << HumanSeconds(y) << "</title></rect>\n";
    }
  }
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 8 << "\" text-anchor=\"middle\">job size (GPUs)</text>\n";
  for (size_t k = 0; k < series.size(); ++k) {
    const double ly = T + 10 + 16 * static_cast<double>(k);
    o << "<rect x=\"" << W - R + 10 << "\" y=\"" << ly - 5 << "\" width=\"20\" height=\"10\" fill=\"" << series[k].color
      << "\"/>";
    o << "<text x=\"" << W - R + 34 << "\" y=\"" << ly + 4 << "\">" << HtmlEscape(series[k].name) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace

std::vector<std::pair<std::string, std::string>> FormatPlots(const std::vector<PolicyRun>& runs) {
  std::vector<Series> util, queue, frag, block, cdf, wait;
  const double day = 86400;
  for (size_t k = 0; k < runs.size(); ++k) {
    const SimResult& r = runs[k].result;
    const std::string color = kColors[k % std::size(kColors)];
    const double g = r.cluster_gpus ? r.cluster_gpus : 1;
    Series u{r.policy, color, false, {}}, q{r.policy, color, false, {}}, f{r.policy, color, false, {}},
        b{r.policy, color, false, {}};
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
      const double t = static_cast<double>(s.t) / day;
      u.points.push_back({t, s.busy_gpus / g});
      q.points.push_back({t, static_cast<double>(s.pending_jobs)});
      f.points.push_back({t, s.free_gpus > 0 ? s.frag_gpus / s.free_gpus : 0});
      b.points.push_back({t, static_cast<double>(s.largest_free[level])});
    }
    util.push_back(std::move(u));
    if (k == 0) {
      Series off{"offered load", "#555", true, {}};
      const std::vector<double> o = OfferedLoad(r.jobs, r.series, r.cluster_gpus);
      for (size_t i = 0; i < o.size(); ++i) off.points.push_back({static_cast<double>(r.series[i].t) / day, o[i]});
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
    Series c{r.policy, color, false, {}};
    for (size_t i = 0; i < jct.size(); ++i) {
      if (i + 1 < jct.size() && jct[i + 1] == jct[i]) continue;
      c.points.push_back({jct[i], static_cast<double>(i + 1) / static_cast<double>(jct.size())});
    }
    cdf.push_back(std::move(c));
    Series w{r.policy, color, false, {}};
    for (size_t i = 0; i < runs[k].summary.wait_by_size.size(); ++i)
      w.points.push_back({static_cast<double>(i), runs[k].summary.wait_by_size[i].avg_wait});
    wait.push_back(std::move(w));
  }
  std::vector<std::string> groups;
  for (const SizeBucket& b : DefaultSizeBuckets()) groups.push_back(b.label);

  return {
      {"utilization", LineChart("GPU utilization vs offered load", "days", "fraction of GPUs", util, false, 1.5)},
      {"queue", LineChart("Queue length", "days", "pending jobs", queue)},
      {"fragmentation",
       LineChart("Fragmentation (FGD-style)", "days", "unusable share of idle GPUs", frag, false, 1.0)},
      {"largest_free", LineChart("Largest free block", "days", "GPUs", block)},
      {"jct_cdf", LineChart("JCT CDF", "job completion time (log)", "fraction of jobs", cdf, true)},
      {"wait_by_size", BarChart("Average wait by job size", groups, wait)},
  };
}

}  // namespace phalanx
