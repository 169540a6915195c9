#include "sim/metrics.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace phalanx {

std::array<uint32_t, kLevelCount> LargestFreeByLevel(const Topology& topo) {
  std::array<uint32_t, kLevelCount> out{};
  for (uint32_t d = 0; d < topo.domain_count(); ++d) {
    const Domain& dom = topo.domain(DomainId(d));
    uint32_t& best = out[static_cast<int>(dom.level)];
    best = std::max(best, topo.free_gpus(DomainId(d)));
  }
  return out;
}

std::vector<double> OfferedLoad(const std::vector<JobOutcome>& jobs, const std::vector<Sample>& series,
                                uint32_t cluster_gpus) {
  // Sweep: +gpus at submit, -gpus at submit + duration.
  std::vector<std::pair<Time, int64_t>> deltas;
  deltas.reserve(jobs.size() * 2);
  for (const JobOutcome& j : jobs) {
    deltas.push_back({j.submit, static_cast<int64_t>(j.gpus)});
    deltas.push_back({j.submit + j.duration, -static_cast<int64_t>(j.gpus)});
  }
  std::sort(deltas.begin(), deltas.end());
  std::vector<double> out;
  out.reserve(series.size());
  size_t i = 0;
  int64_t demand = 0;
  for (const Sample& s : series) {
    while (i < deltas.size() && deltas[i].first <= s.t) demand += deltas[i++].second;
    out.push_back(cluster_gpus == 0 ? 0 : static_cast<double>(demand) / cluster_gpus);
  }
  return out;
}

std::vector<SizeBucket> DefaultSizeBuckets() {
  return {{"1", 1, 1},       {"2-4", 2, 4},     {"5-8", 5, 8},          {"9-16", 9, 16},
          {"17-32", 17, 32}, {"33-64", 33, 64}, {">64", 65, UINT32_MAX}};
}

double Quantile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

namespace {
double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// Summary::by_user, users and jain_slowdown from the users' sums (avg_wait and
// avg_bounded_slowdown hold sums here) and their jobs' waits.
void SummarizeUsers(std::map<std::string, UserRow>& users, std::map<std::string, std::vector<double>>& waits,
                    size_t top, Summary& s) {
  double sum = 0, sum_sq = 0;
  size_t n = 0;
  for (auto& [name, u] : users) {
    if (u.finished == 0) continue;
    const double x = u.avg_bounded_slowdown / static_cast<double>(u.finished);
    sum += x;
    sum_sq += x * x;
    ++n;
  }
  s.jain_slowdown = n > 0 && sum_sq > 0 ? sum * sum / (static_cast<double>(n) * sum_sq) : 1;
  s.users = users.size();
  std::vector<UserRow> rows;
  rows.reserve(users.size());
  for (auto& [name, u] : users) rows.push_back(std::move(u));
  std::sort(rows.begin(), rows.end(), [](const UserRow& a, const UserRow& b) {
    if (a.gpu_h != b.gpu_h) return a.gpu_h > b.gpu_h;
    return a.user < b.user;
  });
  std::vector<std::vector<double>> row_waits;
  for (const UserRow& u : rows) row_waits.push_back(std::move(waits[u.user]));
  if (rows.size() > top) {
    UserRow others;
    others.user = "others";
    std::vector<double> others_waits;
    for (size_t i = top; i < rows.size(); ++i) {
      others.jobs += rows[i].jobs;
      others.finished += rows[i].finished;
      others.gpu_h += rows[i].gpu_h;
      others.avg_wait += rows[i].avg_wait;
      others.avg_bounded_slowdown += rows[i].avg_bounded_slowdown;
      others_waits.insert(others_waits.end(), row_waits[i].begin(), row_waits[i].end());
    }
    rows.resize(top);
    row_waits.resize(top);
    rows.push_back(std::move(others));
    row_waits.push_back(std::move(others_waits));
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    UserRow& u = rows[i];
    std::vector<double>& w = row_waits[i];
    u.max_wait = w.empty() ? 0 : *std::max_element(w.begin(), w.end());
    u.p99_wait = Quantile(w, 0.99);
    u.avg_wait = u.jobs ? u.avg_wait / static_cast<double>(u.jobs) : 0;
    u.avg_bounded_slowdown = u.finished ? u.avg_bounded_slowdown / static_cast<double>(u.finished) : 0;
  }
  s.by_user = std::move(rows);
}

}  // namespace

Summary Summarize(const std::string& policy, const std::vector<JobOutcome>& jobs, const std::vector<Sample>& series,
                  const RunCounters& c, uint32_t cluster_gpus, size_t top_users) {
  Summary s;
  s.policy = policy;
  s.jobs = jobs.size();
  s.wait_by_size = DefaultSizeBuckets();
  std::vector<double> jct, wait, bsld;
  std::vector<std::vector<double>> bucket_wait(s.wait_by_size.size()), bucket_jct(s.wait_by_size.size());
  std::map<std::string, UserRow> users;
  std::map<std::string, std::vector<double>> user_waits;
  Time last_end = 0;
  for (const JobOutcome& j : jobs) {
    if (j.rejected) {
      ++s.rejected;
      continue;
    }
    if (j.state == JobState::kKilled) ++s.killed;
    s.preemptions += j.preemptions;
    s.resizes += j.resizes;
    s.ckpt_lost_gpu_h += j.lost_gpu_s / 3600.0;
    // Jobs still waiting at the end count with the time waited so far.
    const double w = j.first_start >= 0 ? static_cast<double>(j.wait()) : static_cast<double>(c.end - j.submit);
    if (j.first_start < 0) ++s.never_started;
    wait.push_back(w);
    size_t bucket = s.wait_by_size.size();
    for (size_t k = 0; k < s.wait_by_size.size(); ++k) {
      SizeBucket& b = s.wait_by_size[k];
      if (j.gpus >= b.lo && j.gpus <= b.hi) {
        b.jobs++;
        b.avg_wait += w;
        b.max_wait = std::max(b.max_wait, w);
        bucket_wait[k].push_back(w);
        bucket = k;
      }
    }
    UserRow& u = users[j.user];
    u.user = j.user;
    u.jobs++;
    u.gpu_h += static_cast<double>(j.gpus) * static_cast<double>(j.duration) / 3600.0;
    u.avg_wait += w;
    user_waits[j.user].push_back(w);
    if (j.gpus >= 64) {
      ++s.large_jobs;
      s.max_wait_large = std::max(s.max_wait_large, w);
    }
    if (!j.finished()) {
      ++s.unfinished;
      continue;
    }
    ++s.finished;
    last_end = std::max(last_end, j.end);
    jct.push_back(static_cast<double>(j.jct()));
    bsld.push_back(
        std::max(1.0, static_cast<double>(j.jct()) / std::max<double>(static_cast<double>(j.duration), 10.0)));
    if (bucket < s.wait_by_size.size()) {
      SizeBucket& b = s.wait_by_size[bucket];
      b.finished++;
      b.avg_jct += jct.back();
      b.max_jct = std::max(b.max_jct, jct.back());
      bucket_jct[bucket].push_back(jct.back());
    }
    u.finished++;
    u.avg_bounded_slowdown += bsld.back();
  }
  for (size_t k = 0; k < s.wait_by_size.size(); ++k) {
    SizeBucket& b = s.wait_by_size[k];
    b.avg_wait = b.jobs ? b.avg_wait / static_cast<double>(b.jobs) : 0;
    b.avg_jct = b.finished ? b.avg_jct / static_cast<double>(b.finished) : 0;
    b.p99_wait = Quantile(bucket_wait[k], 0.99);
    b.p99_jct = Quantile(bucket_jct[k], 0.99);
  }
  SummarizeUsers(users, user_waits, top_users, s);
  s.avg_jct = Mean(jct);
  s.avg_wait = Mean(wait);
  s.avg_bounded_slowdown = Mean(bsld);
  s.p50_jct = Quantile(jct, 0.5);
  s.p99_jct = Quantile(jct, 0.99);
  s.p50_wait = Quantile(wait, 0.5);
  s.p99_wait = Quantile(wait, 0.99);
  s.makespan = static_cast<double>(std::max(last_end, c.end));
  const double capacity = static_cast<double>(cluster_gpus) * s.makespan;
  s.utilization = capacity > 0 ? c.busy_gpu_s / capacity : 0;
  s.offered_load = capacity > 0 ? c.work_gpu_s / capacity : 0;
  double rate = 0, frag = 0;
  size_t rate_n = 0;
  for (const Sample& x : series) {
    frag += x.frag_gpus;
    if (x.free_gpus > 0) {
      rate += x.frag_gpus / x.free_gpus;
      ++rate_n;
    }
    for (int l = 0; l < kLevelCount; ++l) s.avg_largest_free[l] += x.largest_free[l];
  }
  if (!series.empty()) {
    s.avg_frag_gpus = frag / static_cast<double>(series.size());
    for (double& v : s.avg_largest_free) v /= static_cast<double>(series.size());
  }
  s.avg_frag_rate = rate_n ? rate / static_cast<double>(rate_n) : 0;
  s.placement_eff = c.placement_weight > 0 ? c.placement_score / c.placement_weight : 1;
  s.placement_eff_static = c.placement_weight > 0 ? c.placement_score_static / c.placement_weight : 1;
  s.placement_lost_gpu_h = c.slow_gpu_s / 3600.0;
  s.lost_work_gpu_h = c.lost_work_gpu_s / 3600.0;
  s.overhead_gpu_h = c.overhead_gpu_s / 3600.0;
  s.passes = c.passes;
  return s;
}

}  // namespace phalanx
