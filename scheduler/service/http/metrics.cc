#include "service/http/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <type_traits>
#include <utility>

#include "service/http/escape.h"
#include "util/utf8.h"

namespace phalanx::http {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Checks [a-z_][a-z0-9_]* without a leading "__"; `what` is "metric name" or "label name".
Status ValidateSnakeCase(std::string_view name, std::string_view what) {
  std::string where = SanitizeUtf8(name);
  if (name.empty()) return Fail(where, std::string(what) + " is empty");
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || c == '_' || (i > 0 && c >= '0' && c <= '9');
    if (!ok) {
      return Fail(where, std::string(what) + " must match [a-z_][a-z0-9_]* (snake_case" +
                             (c == ':' ? "; ':' is for recording rules)" : ")"));
    }
  }
  if (name.starts_with("__")) {
    return Fail(where, std::string(what) + " may not start with \"__\" (reserved)");
  }
  return {};
}

std::string_view TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "untyped";
}

void AtomicAdd(std::atomic<double>& value, double amount) { value.fetch_add(amount, std::memory_order_relaxed); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Values

void Counter::Inc(double amount) {
  if (!(amount > 0)) return;  // also NaN
  AtomicAdd(value_, amount);
}

void Counter::SetTotal(double total) {
  if (std::isnan(total)) return;
  value_.store(total, std::memory_order_relaxed);
}

void Gauge::Inc(double amount) { AtomicAdd(value_, amount); }

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  if (std::isnan(value)) return;
  // The first bucket whose bound is >= value ("le" is inclusive); past the last: +Inf.
  size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  std::lock_guard lock(mu_);
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot out;
  std::lock_guard lock(mu_);
  out.cumulative.reserve(counts_.size());
  uint64_t running = 0;
  for (uint64_t c : counts_) out.cumulative.push_back(running += c);
  out.sum = sum_;
  out.count = count_;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Families

MetricFamily::MetricFamily(std::string name, std::string help, MetricType type, std::vector<std::string> label_names)
    : name_(std::move(name)), help_(std::move(help)), type_(type), label_names_(std::move(label_names)) {}

std::string MetricFamily::LabelPrefix(const std::vector<std::string>& values) const {
  std::string out;
  for (size_t i = 0; i < label_names_.size(); ++i) {
    out += i == 0 ? "{" : ",";
    out += label_names_[i];
    out += "=\"";
    out += EscapeLabelValue(values[i]);
    out += '"';
  }
  return out;
}

void MetricFamily::RenderHeader(std::string& out) const {
  out += "# HELP " + name_ + " " + EscapeHelp(help_) + "\n";
  out += "# TYPE " + name_ + " " + std::string(TypeName(type_)) + "\n";
}

template <typename M>
Family<M>::Family(std::string name, std::string help, MetricType type, std::vector<std::string> label_names,
                  std::vector<double> bounds)
    : MetricFamily(std::move(name), std::move(help), type, std::move(label_names)),
      bounds_(std::move(bounds)),
      sink_(MakeChild()) {
  if (MetricFamily::label_names().empty()) {
    children_.emplace(std::vector<std::string>{}, MakeChild());
  }
}

template <typename M>
std::unique_ptr<M> Family<M>::MakeChild() const {
  if constexpr (std::is_same_v<M, Histogram>) {
    return std::make_unique<Histogram>(bounds_);
  } else {
    return std::make_unique<M>();
  }
}

template <typename M>
Result<M*> Family<M>::Get(const std::vector<std::string>& values) {
  if (values.size() != label_names().size()) {
    return Fail(name(), "wants " + std::to_string(label_names().size()) + " label value(s), got " +
                            std::to_string(values.size()));
  }
  std::lock_guard lock(mu_);
  auto [it, inserted] = children_.try_emplace(values);
  if (inserted) it->second = MakeChild();
  return it->second.get();
}

template <typename M>
M& Family<M>::WithLabels(std::initializer_list<std::string_view> values) {
  auto child = Get(std::vector<std::string>(values.begin(), values.end()));
  return child ? **child : *sink_;
}

template <typename M>
bool Family<M>::Remove(const std::vector<std::string>& values) {
  std::lock_guard lock(mu_);
  if (label_names().empty()) return false;  // the one child of an unlabeled family stays
  return children_.erase(values) > 0;
}

template <typename M>
void Family<M>::Clear() {
  std::lock_guard lock(mu_);
  children_.clear();
  if (label_names().empty()) children_.emplace(std::vector<std::string>{}, MakeChild());
}

template <typename M>
size_t Family<M>::size() const {
  std::lock_guard lock(mu_);
  return children_.size();
}

template <typename M>
void Family<M>::Render(std::string& out) const {
  std::lock_guard lock(mu_);
  if (children_.empty()) return;
  RenderHeader(out);
  for (const auto& [values, child] : children_) {
    std::string labels = LabelPrefix(values);
    if constexpr (std::is_same_v<M, Histogram>) {
      Histogram::Snapshot snap = child->Read();
      // name_bucket{labels,le="bound"}: the prefix gets le as its last label.
      std::string bucket = name() + "_bucket" + (labels.empty() ? "{" : labels + ",") + "le=\"";
      for (size_t i = 0; i < bounds_.size(); ++i) {
        out += bucket + FormatFloat(bounds_[i]) + "\"} " + std::to_string(snap.cumulative[i]) + "\n";
      }
      out += bucket + "+Inf\"} " + std::to_string(snap.count) + "\n";
      std::string closed = labels.empty() ? "" : labels + "}";
      out += name() + "_sum" + closed + " " + FormatValue(snap.sum) + "\n";
      out += name() + "_count" + closed + " " + std::to_string(snap.count) + "\n";
    } else {
      out += name() + (labels.empty() ? "" : labels + "}") + " " + FormatValue(child->Value()) + "\n";
    }
  }
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

// ---------------------------------------------------------------------------------------------
// Buckets

std::vector<double> DefaultBuckets() { return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}; }

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  for (int i = 0; i < count; ++i, start *= factor) out.push_back(start);
  return out;
}

std::vector<double> LinearBuckets(double start, double width, int count) {
  std::vector<double> out;
  for (int i = 0; i < count; ++i) out.push_back(start + width * i);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Registry

Status ValidateMetricName(std::string_view name) { return ValidateSnakeCase(name, "metric name"); }

Status ValidateLabelName(std::string_view name) {
  if (Status s = ValidateSnakeCase(name, "label name"); !s) return s;
  if (name == "le" || name == "quantile") {
    return Fail(std::string(name), "label name is reserved (histogram buckets and summary quantiles)");
  }
  return {};
}

MetricsRegistry::MetricsRegistry() = default;
MetricsRegistry::~MetricsRegistry() = default;

Status MetricsRegistry::CheckNames(std::string_view base, MetricType type, std::string_view help,
                                   const std::vector<std::string>& label_names) const {
  std::string where(base);
  if (Status s = ValidateMetricName(base); !s) return s;
  if (type != MetricType::kCounter) {
    for (std::string_view suffix : {"_total", "_bucket", "_sum", "_count"}) {
      if (EndsWith(base, suffix)) {
        return Fail(where, std::string(TypeName(type)) + " name may not end in " + std::string(suffix) +
                               " (counters and histograms add it)");
      }
    }
  }
  if (help.empty()) return Fail(where, "HELP text is empty");
  std::set<std::string_view> seen;
  for (const std::string& label : label_names) {
    if (Status s = ValidateLabelName(label); !s) {
      return Fail(where, "label '" + s.error().where + "': " + s.error().message);
    }
    if (!seen.insert(label).second) return Fail(where, "label name '" + label + "' repeats");
  }
  if (bases_.contains(base)) return Fail(where, "metric name is already registered");
  return {};
}

template <typename M>
Result<Family<M>*> MetricsRegistry::Add(std::string_view name, std::string_view help, MetricType type,
                                        std::vector<std::string> label_names, std::vector<double> bounds) {
  std::string base(name);
  if (type == MetricType::kCounter && EndsWith(base, "_total")) {
    base.resize(base.size() - 6);
  }
  std::lock_guard lock(mu_);
  PHX_RETURN_IF_ERROR(CheckNames(base, type, help, label_names));
  std::string rendered = type == MetricType::kCounter ? base + "_total" : base;
  if (families_.contains(rendered)) return Fail(rendered, "metric name is already registered");
  auto family =
      std::make_unique<Family<M>>(rendered, std::string(help), type, std::move(label_names), std::move(bounds));
  Family<M>* out = family.get();
  families_.emplace(std::move(rendered), std::move(family));
  bases_.emplace(std::move(base), type);
  return out;
}

Result<CounterFamily*> MetricsRegistry::AddCounter(std::string_view name, std::string_view help,
                                                   std::vector<std::string> label_names) {
  return Add<Counter>(name, help, MetricType::kCounter, std::move(label_names), {});
}

Result<GaugeFamily*> MetricsRegistry::AddGauge(std::string_view name, std::string_view help,
                                               std::vector<std::string> label_names) {
  return Add<Gauge>(name, help, MetricType::kGauge, std::move(label_names), {});
}

Result<HistogramFamily*> MetricsRegistry::AddHistogram(std::string_view name, std::string_view help,
                                                       std::vector<std::string> label_names,
                                                       std::vector<double> bounds) {
  std::string where = SanitizeUtf8(name);
  if (!bounds.empty() && bounds.back() == std::numeric_limits<double>::infinity()) {
    bounds.pop_back();
  }
  if (bounds.empty()) return Fail(where, "histogram needs at least one finite bucket bound");
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) {
      return Fail(where, "bucket bound " + FormatValue(bounds[i]) + " is not finite");
    }
    if (i > 0 && !(bounds[i] > bounds[i - 1])) {
      return Fail(where,
                  "bucket bounds must increase: " + FormatValue(bounds[i]) + " after " + FormatValue(bounds[i - 1]));
    }
  }
  return Add<Histogram>(name, help, MetricType::kHistogram, std::move(label_names), std::move(bounds));
}

void MetricsRegistry::AddCollector(Collector collector) {
  std::lock_guard lock(mu_);
  collectors_.push_back(std::move(collector));
}

std::string MetricsRegistry::Render() {
  std::lock_guard scrape(scrape_mu_);
  std::vector<Collector> collectors;
  {
    std::lock_guard lock(mu_);
    collectors = collectors_;
  }
  for (const Collector& collect : collectors) collect();
  std::string out;
  std::lock_guard lock(mu_);
  for (const auto& [name, family] : families_) family->Render(out);
  return out;
}

}  // namespace phalanx::http
