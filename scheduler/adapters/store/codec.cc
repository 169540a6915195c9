#include "adapters/store/codec.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <type_traits>
#include <utility>

#include "core/topology/level.h"
#include "core/topology/limits.h"
#include "util/dependency.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace phalanx::store {
namespace {

bool Plain(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '~' || c == ':' || c == '/' || c == '@' || c == '+' || c == ',' || c == '-';
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The spec's fields, in their one encoding order.
constexpr std::string_view kSpecKeys[] = {"v",    "name",    "user", "account", "class", "gpus",  "nodes",
                                          "gpn",  "level",   "fit",  "excl",    "rail",  "min",   "step",
                                          "wall", "preempt", "ckpt", "restart", "held",  "after", "submit"};
constexpr size_t kSpecFields = std::size(kSpecKeys);
// After them, written only when set (rows from before a field existed decode as its default).
constexpr std::string_view kOptionalKeys[] = {"grace",   "dep",        "array",     "begin", "nodelist",
                                              "exclude", "constraint", "norequeue", "top",   "susp"};
constexpr size_t kOptionalFields = std::size(kOptionalKeys);

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

}  // namespace

std::string Escape(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (Plain(c)) {
      out += c;
    } else {
      const auto b = static_cast<unsigned char>(c);
      out += '%';
      out += kHex[b >> 4];
      out += kHex[b & 15];
    }
  }
  return out;
}

Result<std::string> Unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '%') {
      if (i + 2 >= s.size()) return Fail("", "truncated %-escape");
      const int hi = HexDigit(s[i + 1]), lo = HexDigit(s[i + 2]);
      if (hi < 0 || lo < 0) return Fail("", "bad %-escape '" + std::string(s.substr(i, 3)) + "'");
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (Plain(c)) {
      out += c;
    } else {
      return Fail("", "unescaped character in '" + Escape(s) + "'");
    }
  }
  return out;
}

std::string EncodeGpus(const std::vector<GpuId>& gpus) {
  std::string out;
  for (size_t i = 0; i < gpus.size();) {
    size_t j = i;
    while (j + 1 < gpus.size() && gpus[j].value != GpuId::kInvalid && gpus[j + 1].value == gpus[j].value + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(gpus[i].value);
    if (j > i) out += '-' + std::to_string(gpus[j].value);
    i = j + 1;
  }
  return out;
}

Result<std::vector<GpuId>> DecodeGpus(std::string_view text) {
  std::vector<GpuId> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const size_t dash = item.find('-');
    uint32_t lo = 0, hi = 0;
    if (!ParseNumber(item.substr(0, dash), &lo) ||
        (dash != std::string_view::npos && !ParseNumber(item.substr(dash + 1), &hi)))
      return Fail("", "bad GPU list item '" + std::string(item) + "'");
    if (dash == std::string_view::npos) hi = lo;
    // A run is only ever written for consecutive ascending indices, at least two of them.
    if (hi < lo || hi == GpuId::kInvalid || (dash != std::string_view::npos && hi == lo))
      return Fail("", "bad GPU range '" + std::string(item) + "'");
    // Bounded in all, not only per range: 20 ranges of 10^7 in 200 bytes of a corrupt row
    // would otherwise take gigabytes. No allocation holds more GPUs than a cluster can have.
    if (out.size() + (uint64_t{hi} - lo + 1) > static_cast<uint64_t>(kMaxTopologyGpus)) {
      return Fail("", "GPU list '" + std::string(item) + "' reaches more than " + std::to_string(kMaxTopologyGpus) +
                          " GPUs (the cluster limit)");
    }
    for (uint32_t g = lo;; ++g) {
      out.push_back(GpuId(g));
      if (g == hi) break;
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
    if (text.empty()) return Fail("", "GPU list ends with ','");
  }
  return out;
}

std::string EncodeJobIds(const std::vector<JobId>& ids) {
  std::string out;
  for (JobId id : ids) {
    if (!out.empty()) out += ',';
    out += std::to_string(id);
  }
  return out;
}

Result<std::vector<JobId>> DecodeJobIds(std::string_view text) {
  std::vector<JobId> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    JobId id = 0;
    if (!ParseNumber(text.substr(0, comma), &id))
      return Fail("", "bad job id '" + std::string(text.substr(0, comma)) + "'");
    out.push_back(id);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
    if (text.empty()) return Fail("", "job id list ends with ','");
  }
  return out;
}

std::string EncodeJobSpec(const JobSpec& s) {
  const auto b = [](bool v) { return v ? "1" : "0"; };
  std::string out;
  out.reserve(160);
  out += "v=1";
  out += " name=" + Escape(s.name);
  out += " user=" + Escape(s.user);
  out += " account=" + Escape(s.account);
  out += " class=" + Escape(s.priority_class);
  out += " gpus=" + std::to_string(s.shape.gpus);
  out += " nodes=" + std::to_string(s.shape.nodes);
  out += " gpn=" + std::to_string(s.shape.gpus_per_node);
  out += " level=" + std::string(LevelName(s.shape.level));
  out += " fit=" + std::string(FitModeName(s.shape.fit));
  out += std::string(" excl=") + b(s.shape.exclusive);
  out += std::string(" rail=") + b(s.shape.rail_aligned);
  out += " min=" + std::to_string(s.min_gpus);
  out += " step=" + std::string(ElasticStepName(s.step_kind)) + ":" + std::to_string(s.step);
  out += " wall=" + std::to_string(s.walltime);
  out += std::string(" preempt=") + (s.preemptible ? b(*s.preemptible) : "-");
  out += " ckpt=" + std::to_string(s.checkpoint_interval);
  out += " restart=" + std::to_string(s.restart_cost);
  out += std::string(" held=") + b(s.held);
  out += " after=" + EncodeJobIds(s.after_ok);
  out += " submit=" + std::to_string(s.submit);
  // Optional, written only when set: rows written before the field existed decode as 0.
  if (s.checkpoint_grace != 0) out += " grace=" + std::to_string(s.checkpoint_grace);
  if (!s.depends.empty()) out += " dep=" + Escape(FormatDependencies(s.depends));
  if (s.array_id != kNoJob) {
    out += " array=" + std::to_string(s.array_id) + ":" + std::to_string(s.array_task) + ":" +
           std::to_string(s.array_max_running);
  }
  if (s.begin != 0) out += " begin=" + std::to_string(s.begin);
  if (!s.nodelist.empty()) out += " nodelist=" + Escape(JoinNames(s.nodelist));
  if (!s.exclude.empty()) out += " exclude=" + Escape(JoinNames(s.exclude));
  if (!s.constraint.empty()) out += " constraint=" + Escape(s.constraint);
  if (s.no_requeue) out += " norequeue=1";
  if (s.top != 0) out += " top=" + std::to_string(s.top);
  if (s.suspended) out += " susp=" + std::to_string(s.suspended_at);  // suspended since
  return out;
}

Result<JobSpec> DecodeJobSpec(std::string_view text) {
  // Split into exactly the expected fields, in order, then the optional ones (each at most once,
  // in kOptionalKeys' order).
  std::string_view values[kSpecFields];
  std::optional<std::string_view> optional[kOptionalFields];
  size_t n = 0, next_optional = 0;
  while (true) {
    const size_t space = text.find(' ');
    const std::string_view field = text.substr(0, space);
    const size_t eq = field.find('=');
    if (eq == std::string_view::npos) return Fail("spec", "field '" + Escape(field) + "' has no '='");
    const std::string_view key = field.substr(0, eq);
    size_t o = next_optional;
    while (n == kSpecFields && o < kOptionalFields && kOptionalKeys[o] != key) ++o;
    if (n == kSpecFields && o < kOptionalFields) {
      optional[o] = field.substr(eq + 1);
      next_optional = o + 1;
    } else {
      if (n >= kSpecFields) {
        return Fail("spec", "unexpected field '" + Escape(key) + "' after '" +
                                std::string(next_optional > 0 ? kOptionalKeys[next_optional - 1] : "submit") + "'");
      }
      if (key != kSpecKeys[n])
        return Fail("spec", "expected field '" + std::string(kSpecKeys[n]) + "', found '" + Escape(key) + "'");
      values[n++] = field.substr(eq + 1);
    }
    if (space == std::string_view::npos) break;
    text.remove_prefix(space + 1);
  }
  if (n != kSpecFields) return Fail("spec", "missing field '" + std::string(kSpecKeys[n]) + "'");
  if (values[0] != "1") return Fail("spec.v", "unknown spec encoding version '" + Escape(values[0]) + "'");

  JobSpec s;
  const auto where = [](size_t i) { return "spec." + std::string(kSpecKeys[i]); };
  const auto str = [&](size_t i, std::string* out) -> Status {
    auto v = Unescape(values[i]);
    if (!v) return Fail(where(i), v.error().message);
    *out = std::move(*v);
    return {};
  };
  const auto num = [&](size_t i, auto* out) -> Status {
    if (!ParseNumber(values[i], out)) return Fail(where(i), "bad number '" + Escape(values[i]) + "'");
    return {};
  };
  const auto flag = [&](size_t i, bool* out) -> Status {
    if (values[i] != "0" && values[i] != "1")
      return Fail(where(i), "expected 0 or 1, found '" + Escape(values[i]) + "'");
    *out = values[i] == "1";
    return {};
  };
  PHX_RETURN_IF_ERROR(str(1, &s.name));
  PHX_RETURN_IF_ERROR(str(2, &s.user));
  PHX_RETURN_IF_ERROR(str(3, &s.account));
  PHX_RETURN_IF_ERROR(str(4, &s.priority_class));
  PHX_RETURN_IF_ERROR(num(5, &s.shape.gpus));
  PHX_RETURN_IF_ERROR(num(6, &s.shape.nodes));
  PHX_RETURN_IF_ERROR(num(7, &s.shape.gpus_per_node));
  // Only the canonical names: ParseLevel also takes aliases, which EncodeJobSpec never writes.
  auto level = ParseLevel(values[8]);
  if (!level || LevelName(*level) != values[8]) return Fail(where(8), "unknown level '" + Escape(values[8]) + "'");
  s.shape.level = *level;
  auto fit = ParseFitMode(values[9]);
  if (!fit) return Fail(where(9), "unknown fit '" + Escape(values[9]) + "'");
  s.shape.fit = *fit;
  PHX_RETURN_IF_ERROR(flag(10, &s.shape.exclusive));
  PHX_RETURN_IF_ERROR(flag(11, &s.shape.rail_aligned));
  PHX_RETURN_IF_ERROR(num(12, &s.min_gpus));
  const std::string_view step = values[13];
  const size_t colon = step.find(':');
  auto step_kind = ParseElasticStep(step.substr(0, colon));
  if (!step_kind || colon == std::string_view::npos || !ParseNumber(step.substr(colon + 1), &s.step))
    return Fail(where(13), "expected KIND:N, found '" + Escape(step) + "'");
  s.step_kind = *step_kind;
  PHX_RETURN_IF_ERROR(num(14, &s.walltime));
  if (values[15] != "-") {
    bool p = false;
    if (!flag(15, &p)) return Fail(where(15), "expected -, 0 or 1, found '" + Escape(values[15]) + "'");
    s.preemptible = p;
  }
  PHX_RETURN_IF_ERROR(num(16, &s.checkpoint_interval));
  PHX_RETURN_IF_ERROR(num(17, &s.restart_cost));
  PHX_RETURN_IF_ERROR(flag(18, &s.held));
  auto after = DecodeJobIds(values[19]);
  if (!after) return Fail(where(19), after.error().message);
  s.after_ok = std::move(*after);
  PHX_RETURN_IF_ERROR(num(20, &s.submit));
  // Written only when not 0 or empty, so "grace=0" is not the one encoding of any spec.
  const auto& grace = optional[0];
  if (grace && (!ParseNumber(*grace, &s.checkpoint_grace) || s.checkpoint_grace == 0))
    return Fail("spec.grace", "bad number '" + Escape(*grace) + "'");
  if (const auto& begin = optional[3]; begin && (!ParseNumber(*begin, &s.begin) || s.begin == 0))
    return Fail("spec.begin", "bad time '" + Escape(*begin) + "'");
  const auto names = [&](size_t i, std::vector<std::string>* out) -> Status {
    if (!optional[i]) return {};
    auto v = Unescape(*optional[i]);
    if (!v || v->empty())
      return Fail("spec." + std::string(kOptionalKeys[i]), "bad node names '" + Escape(*optional[i]) + "'");
    for (std::string_view name : Split(*v, ',')) out->emplace_back(name);
    return {};
  };
  PHX_RETURN_IF_ERROR(names(4, &s.nodelist));
  PHX_RETURN_IF_ERROR(names(5, &s.exclude));
  if (const auto& c = optional[6]) {
    auto v = Unescape(*c);
    if (!v || v->empty()) return Fail("spec.constraint", "bad constraint '" + Escape(*c) + "'");
    s.constraint = std::move(*v);
  }
  if (const auto& top = optional[8]; top && (!ParseNumber(*top, &s.top) || s.top == 0))
    return Fail("spec.top", "bad number '" + Escape(*top) + "'");
  if (const auto& susp = optional[9]) {
    if (!ParseNumber(*susp, &s.suspended_at) || s.suspended_at < 0)
      return Fail("spec.susp", "bad time '" + Escape(*susp) + "'");
    s.suspended = true;
  }
  if (const auto& nr = optional[7]) {
    if (*nr != "1") return Fail("spec.norequeue", "expected 1, found '" + Escape(*nr) + "'");
    s.no_requeue = true;
  }
  if (const auto& dep = optional[1]) {
    auto text = Unescape(*dep);
    if (!text) return Fail("spec.dep", text.error().message);
    auto d = ParseDependencies(*text);
    if (!d) return Fail("spec.dep", d.error().message);
    if (FormatDependencies(*d) != *text)  // one spec, one encoding
      return Fail("spec.dep", "'" + Escape(*text) + "' is not written as the store writes it");
    s.depends = std::move(*d);
  }
  if (const auto& array = optional[2]) {
    const std::vector<std::string_view> parts = Split(*array, ':');
    if (parts.size() != 3 || !ParseNumber(parts[0], &s.array_id) || s.array_id == kNoJob ||
        !ParseNumber(parts[1], &s.array_task) || !ParseNumber(parts[2], &s.array_max_running))
      return Fail("spec.array", "expected ARRAY:TASK:MAX_RUNNING, found '" + Escape(*array) + "'");
  }
  return s;
}

std::string EncodeDecisionPayload(const Decision& d) {
  std::string out;
  const auto add = [&out](std::string_view key, const std::string& value) {
    if (!out.empty()) out += ' ';
    out += key;
    out += '=';
    out += value;
  };
  switch (d.kind) {
    case DecisionKind::kStart: add("gpus", EncodeGpus(d.gpus)); break;
    case DecisionKind::kCheckpoint: add("deadline", std::to_string(d.deadline)); break;
    case DecisionKind::kPreempt: add("requeue", d.requeue ? "1" : "0"); break;
    case DecisionKind::kResize:
      add("gpus", EncodeGpus(d.gpus));
      add("added", EncodeGpus(d.added));
      add("removed", EncodeGpus(d.removed));
      break;
    case DecisionKind::kKill: break;
    case DecisionKind::kWait: add("wait", Escape(d.wait.ToString())); break;
  }
  if (!d.reason.empty()) add("reason", Escape(d.reason));
  return out;
}

namespace {

template <typename E, size_t N>
std::optional<E> FindByName(const std::pair<std::string_view, E> (&table)[N], std::string_view name) {
  for (const auto& [text, value] : table)
    if (text == name) return value;
  return std::nullopt;
}

template <typename E, size_t N>
std::string_view NameOf(const std::pair<std::string_view, E> (&table)[N], E value) {
  for (const auto& [text, v] : table)
    if (v == value) return text;
  return "?";
}

constexpr std::pair<std::string_view, JobState> kJobStates[] = {
    {"pending", JobState::kPending},     {"running", JobState::kRunning}, {"checkpointing", JobState::kCheckpointing},
    {"completed", JobState::kCompleted}, {"failed", JobState::kFailed},   {"cancelled", JobState::kCancelled},
    {"killed", JobState::kKilled},
};
constexpr std::pair<std::string_view, NodeState> kNodeStates[] = {
    {"up", NodeState::kUp}, {"drain", NodeState::kDrain}, {"down", NodeState::kDown}};
constexpr std::pair<std::string_view, FitMode> kFits[] = {
    {"any", FitMode::kAny}, {"prefer", FitMode::kPrefer}, {"require", FitMode::kRequire}};
constexpr std::pair<std::string_view, ElasticStep> kSteps[] = {
    {"any", ElasticStep::kAny}, {"multiple", ElasticStep::kMultiple}, {"pow2", ElasticStep::kPowerOfTwo}};
constexpr std::pair<std::string_view, JobRecord::After> kAfters[] = {{"nothing", JobRecord::After::kNothing},
                                                                     {"preempt", JobRecord::After::kPreempt},
                                                                     {"shrink", JobRecord::After::kShrink}};

}  // namespace

std::optional<JobState> ParseJobState(std::string_view name) { return FindByName(kJobStates, name); }
std::optional<NodeState> ParseNodeState(std::string_view name) { return FindByName(kNodeStates, name); }
std::string_view FitModeName(FitMode fit) { return NameOf(kFits, fit); }
std::optional<FitMode> ParseFitMode(std::string_view name) { return FindByName(kFits, name); }
std::string_view ElasticStepName(ElasticStep step) { return NameOf(kSteps, step); }
std::optional<ElasticStep> ParseElasticStep(std::string_view name) { return FindByName(kSteps, name); }
std::string_view AfterCheckpointName(JobRecord::After after) { return NameOf(kAfters, after); }
std::optional<JobRecord::After> ParseAfterCheckpoint(std::string_view name) { return FindByName(kAfters, name); }

}  // namespace phalanx::store
