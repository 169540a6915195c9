// MetricsRegistry: counters, gauges and histograms rendered in the Prometheus text exposition
// format 0.0.4 (what GET /metrics serves).
//
// A family is a name, HELP text and label names; its children are keyed by label values.
// Render() is deterministic: families sorted by name, children by label values (in label-name
// order), histogram buckets by bound, then _sum and _count. Counters are rendered with the
// `_total` suffix (added when the given name lacks it: "x" and "x_total" name the same counter).
// An unlabeled family always has its one child (rendered at 0 until set); a labeled family with
// no children is left out.
//
// Names are checked when a family is added, so everything rendered passes `promtool check
// metrics` (its lint included): metric and label names are snake_case ASCII ([a-z_][a-z0-9_]*,
// no leading "__", no ':' which is for recording rules); gauges and histograms may not end in
// _total, _bucket, _sum or _count; labels "le" and "quantile" are reserved; HELP is required;
// a name may be registered once. Label values and HELP text may hold anything: they are escaped,
// and bytes that are not UTF-8 are replaced by U+FFFD.
//
// Collectors: functions run by Render() before it renders, in the order added. phalanxd uses
// one to set GPU and job gauges from the scheduling core at scrape time.
//
// Thread-safety: everything is safe to call from any thread. Counter/Gauge updates are atomic
// (lock-free); a Histogram observation takes that child's mutex; Get/WithLabels/Remove take the
// family's mutex. Render() calls are serialized; collectors run on the thread calling Render()
// (in phalanxd the io_context thread, which owns the core) and must not call Render(). A
// reference from Get/WithLabels stays valid until that child is removed (Remove/Clear) or the
// registry is destroyed. Lock order: scrape -> registry -> family -> histogram child.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"

namespace phalanx::http {

inline constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

enum class MetricType { kCounter, kGauge, kHistogram };

class Counter {
 public:
  void Inc(double amount = 1);  // negative and NaN amounts are ignored: counters only go up
  // For collectors that mirror a count kept elsewhere (e.g. in the core). Prometheus reads a
  // decrease as a counter reset.
  void SetTotal(double total);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Inc(double amount = 1);
  void Dec(double amount = 1) { Inc(-amount); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  // `bounds`: the finite upper bounds, strictly increasing (the family checked them).
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);  // NaN is ignored

  struct Snapshot {
    std::vector<uint64_t> cumulative;  // per bound, then +Inf (== count)
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot Read() const;  // consistent: count == cumulative.back()

 private:
  const std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; guarded by mu_
  double sum_ = 0;                // guarded by mu_
  uint64_t count_ = 0;            // guarded by mu_
};

// What the registry holds: one family of any type.
class MetricFamily {
 public:
  virtual ~MetricFamily() = default;
  const std::string& name() const { return name_; }  // as rendered (counters: ..._total)
  const std::string& help() const { return help_; }
  MetricType type() const { return type_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  // Appends HELP, TYPE and the samples (nothing when a labeled family has no children).
  virtual void Render(std::string& out) const = 0;

 protected:
  MetricFamily(std::string name, std::string help, MetricType type, std::vector<std::string> label_names);
  // `{a="x",b="y"` (no closing brace; "" when no labels) for these values.
  std::string LabelPrefix(const std::vector<std::string>& values) const;
  void RenderHeader(std::string& out) const;

 private:
  const std::string name_;
  const std::string help_;
  const MetricType type_;
  const std::vector<std::string> label_names_;
};

template <typename M>
class Family final : public MetricFamily {
 public:
  Family(std::string name, std::string help, MetricType type, std::vector<std::string> label_names,
         std::vector<double> bounds);

  // The child for these label values (one per label name, in order), created at 0 on first
  // use. Fails, naming the family, when the number of values is wrong.
  Result<M*> Get(const std::vector<std::string>& values);
  // Get for call sites whose label count is fixed in code. A wrong count is a bug: it returns a
  // detached child that is never rendered, rather than stopping the daemon.
  M& WithLabels(std::initializer_list<std::string_view> values);
  // Removes one child (false when absent). References to it become invalid.
  bool Remove(const std::vector<std::string>& values);
  // Removes every child; an unlabeled family gets a fresh child at 0.
  void Clear();
  size_t size() const;

  void Render(std::string& out) const override;

 private:
  std::unique_ptr<M> MakeChild() const;

  const std::vector<double> bounds_;  // histograms only
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<M>> children_;  // guarded by mu_
  const std::unique_ptr<M> sink_;                                    // WithLabels with a wrong label count
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

// Prometheus' default buckets: .005 .01 .025 .05 .1 .25 .5 1 2.5 5 10 (seconds).
std::vector<double> DefaultBuckets();
// start, start*factor, ... (`count` bounds). start > 0, factor > 1, count >= 1.
std::vector<double> ExponentialBuckets(double start, double factor, int count);
// start, start+width, ... (`count` bounds). width > 0, count >= 1.
std::vector<double> LinearBuckets(double start, double width, int count);

class MetricsRegistry {
 public:
  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Each fails, with Error{where = the name, message = why}, on a bad or already registered
  // name, a bad or repeated label name, empty HELP, or (histograms) bounds that are empty, not
  // finite or not strictly increasing (a trailing +Inf is accepted and dropped: the +Inf bucket
  // is always there). The family lives as long as the registry.
  Result<CounterFamily*> AddCounter(std::string_view name, std::string_view help,
                                    std::vector<std::string> label_names = {});
  Result<GaugeFamily*> AddGauge(std::string_view name, std::string_view help,
                                std::vector<std::string> label_names = {});
  Result<HistogramFamily*> AddHistogram(std::string_view name, std::string_view help,
                                        std::vector<std::string> label_names,
                                        std::vector<double> bounds = DefaultBuckets());

  using Collector = std::function<void()>;
  void AddCollector(Collector collector);

  // Runs the collectors, then renders every family (text format 0.0.4).
  std::string Render();

 private:
  Status CheckNames(std::string_view base, MetricType type, std::string_view help,
                    const std::vector<std::string>& label_names) const;
  template <typename M>
  Result<Family<M>*> Add(std::string_view name, std::string_view help, MetricType type,
                         std::vector<std::string> label_names, std::vector<double> bounds);

  std::mutex scrape_mu_;  // serializes Render()
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<MetricFamily>, std::less<>> families_;  // rendered name
  std::map<std::string, MetricType, std::less<>> bases_;                        // names without _total: unique
  std::vector<Collector> collectors_;
};

// Checks a metric name / label name (the rules above); the error names it.
Status ValidateMetricName(std::string_view name);
Status ValidateLabelName(std::string_view name);

}  // namespace phalanx::http
