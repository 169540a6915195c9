#include "sim/class_rule.h"

#include "sim/random.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace phalanx {
namespace {

// "<what>: '<v>' is not a whole number >= 0" when `v` is not one.
Result<int64_t> Count(std::string_view what, std::string_view v) {
  const auto n = ParseNumber<int64_t>(v);
  if (!n || *n < 0) return Fail("", std::string(what) + ": '" + std::string(v) + "' is not a whole number >= 0");
  return *n;
}

}  // namespace

Result<ClassRule> ParseClassRule(std::string_view text) {
  ClassRule r;
  r.text = std::string(text);
  const std::string where = "class rule '" + r.text + "'";
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) return Fail(where, "need CONDITIONS:SETTINGS, e.g. gpus>=64:class=high");
  for (std::string_view c : SplitNonEmpty(text.substr(0, colon), ',')) {
    if (c == "all") continue;
    auto num = [&](std::string_view v) -> Result<uint32_t> {
      auto n = Count(c, v);
      if (!n) return Fail(where, n.error().message);
      return static_cast<uint32_t>(*n);
    };
    if (c.starts_with("gpus>=")) {
      auto n = num(c.substr(6));
      PHX_RETURN_IF_ERROR(n);
      r.min_gpus = *n;
    } else if (c.starts_with("gpus<=")) {
      auto n = num(c.substr(6));
      PHX_RETURN_IF_ERROR(n);
      r.max_gpus = *n;
    } else if (c.starts_with("gpus=")) {
      auto n = num(c.substr(5));
      PHX_RETURN_IF_ERROR(n);
      r.min_gpus = r.max_gpus = *n;
    } else if (c.starts_with("user=")) {
      r.user = std::string(c.substr(5));
    } else if (c.starts_with("share=")) {
      const auto d = ParseNumber<double>(c.substr(6));
      if (!d || *d < 0 || *d > 1) return Fail(where, "share: a fraction in [0, 1]");
      r.share = *d;
    } else {
      return Fail(where,
                  "unknown condition '" + std::string(c) + "' (all, gpus>=N, gpus<=N, gpus=N, user=NAME, share=F)");
    }
  }
  for (std::string_view s : SplitNonEmpty(text.substr(colon + 1), ',')) {
    const size_t eq = s.find('=');
    if (eq == std::string_view::npos) return Fail(where, "setting '" + std::string(s) + "' needs KEY=VALUE");
    const std::string_view k = s.substr(0, eq), v = s.substr(eq + 1);
    if (k == "class") {
      r.priority_class = std::string(v);
    } else if (k == "preemptible") {
      if (v != "yes" && v != "no") return Fail(where, "preemptible: yes or no");
      r.preemptible = v == "yes";
    } else if (k == "elastic") {
      const auto d = ParseNumber<double>(v);
      if (!d || *d <= 0 || *d >= 1) return Fail(where, "elastic: the minimum as a fraction of the size, 0 < F < 1");
      r.elastic_min = *d;
    } else if (k == "level" || k == "prefer") {
      auto l = ParseLevel(v);
      if (!l) return Fail(where, std::string(k) + ": unknown level '" + std::string(v) + "' (node, leaf, spine, ...)");
      r.level = *l;
      r.prefer = k == "prefer";
    } else if (k == "gpn") {
      auto n = Count(k, v);
      if (!n || *n == 0) return Fail(where, "gpn: GPUs per node, a whole number > 0");
      r.gpus_per_node = static_cast<uint32_t>(*n);
    } else if (k == "ckpt" || k == "restart") {
      auto n = Count(k, v);
      if (!n) return Fail(where, n.error().message);
      (k == "ckpt" ? r.checkpoint_interval : r.restart_cost) = *n;
    } else {
      return Fail(where, "unknown setting '" + std::string(k) +
                             "' (class, preemptible, elastic, ckpt, restart, level, prefer, gpn)");
    }
  }
  return r;
}

bool RuleMatches(const ClassRule& rule, const TraceJob& job, size_t index, size_t rule_index, uint64_t seed) {
  if (job.gpus < rule.min_gpus || job.gpus > rule.max_gpus) return false;
  if (!rule.user.empty() && rule.user != job.user) return false;
  if (rule.share < 1.0 && SeededUniform(seed ^ 0x72756c65ull, rule_index, index) >= rule.share) return false;
  return true;
}

}  // namespace phalanx
