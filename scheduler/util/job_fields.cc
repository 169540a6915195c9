#include "util/job_fields.h"

#include <algorithm>

#include "util/printable.h"
#include "util/utf8.h"

namespace phalanx {
namespace {

std::string Str(uint64_t n) { return std::to_string(n); }

std::unexpected<Error> Bad(std::string_view field, std::string message) {
  return Fail(std::string(field), std::move(message));
}

// The first control byte (C0 or DEL) in `s`, or npos.
size_t FindControl(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) return i;
  }
  return std::string_view::npos;
}

std::string ControlName(char c) {
  switch (c) {
    case '\0': return "a NUL byte";
    case '\n': return "a newline";
    case '\r': return "a carriage return";
    case '\t': return "a tab";
    case '\x1b': return "an ESC";
    default: return "a control character (" + EscapeForLog(std::string_view(&c, 1)) + ")";
  }
}

Status TooLong(std::string_view field, std::string_view value, size_t max) {
  if (value.size() <= max) return {};
  return Bad(field, QuoteValue(value) + " has " + Str(value.size()) + " bytes; at most " + Str(max) + " are allowed");
}

bool HasSizeIn(uint64_t lo, uint64_t hi, ElasticStepRule rule, uint64_t step) {
  if (rule == ElasticStepRule::kMultiple) return (lo + step - 1) / step * step <= hi;
  for (uint64_t p = 1; p <= hi; p *= 2) {
    if (p >= lo) return true;
  }
  return false;
}

}  // namespace

std::string QuoteValue(std::string_view value) {
  constexpr size_t kShown = 80;
  if (value.size() <= kShown) return "'" + EscapeForLog(value) + "'";
  // Cut at a character boundary so the escape shows no broken sequence.
  size_t cut = kShown;
  while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) --cut;
  return "'" + EscapeForLog(value.substr(0, cut)) + "...'";
}

Status CheckLabel(std::string_view field, std::string_view value, size_t max_bytes) {
  PHX_RETURN_IF_ERROR(TooLong(field, value, max_bytes));
  if (const size_t at = FindControl(value); at != std::string_view::npos) {
    return Bad(field, QuoteValue(value) + " contains " + ControlName(value[at]) + " (byte " + Str(at) +
                          "); control characters are not allowed");
  }
  for (size_t i = 0; i < value.size();) {
    const size_t n = Utf8SequenceLength(value.substr(i));
    if (n == 0) return Bad(field, QuoteValue(value) + " is not valid UTF-8 (byte " + Str(i) + ")");
    // C1 controls (U+0080..U+009F) and the bidirectional overrides/isolates.
    const auto b0 = static_cast<unsigned char>(value[i]);
    const auto b1 = n > 1 ? static_cast<unsigned char>(value[i + 1]) : 0;
    const auto b2 = n > 2 ? static_cast<unsigned char>(value[i + 2]) : 0;
    const bool c1 = b0 == 0xC2 && b1 <= 0x9F;
    const bool bidi =
        b0 == 0xE2 && ((b1 == 0x80 && b2 >= 0xAA && b2 <= 0xAE) || (b1 == 0x81 && b2 >= 0xA6 && b2 <= 0xA9));
    if (c1 || bidi) {
      return Bad(field, QuoteValue(value) + " contains " +
                            (c1 ? "a C1 control character" : "a bidirectional override") + " (byte " + Str(i) +
                            "); control characters are not allowed");
    }
    i += n;
  }
  return {};
}

Status CheckClassName(std::string_view field, std::string_view value) {
  PHX_RETURN_IF_ERROR(TooLong(field, value, 64));
  const bool ok = std::all_of(value.begin(), value.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
  if (!ok) return Bad(field, QuoteValue(value) + " is not a class name (letters, digits, '_' and '-')");
  return {};
}

Status CheckPath(std::string_view field, std::string_view value) {
  PHX_RETURN_IF_ERROR(TooLong(field, value, kMaxPathBytes));
  if (const size_t at = FindControl(value); at != std::string_view::npos) {
    return Bad(field, QuoteValue(value) + " contains " + ControlName(value[at]) + " (byte " + Str(at) +
                          "); control characters are not allowed in paths");
  }
  return {};
}

Status CheckArgument(std::string_view field, std::string_view value) {
  PHX_RETURN_IF_ERROR(TooLong(field, value, kMaxArgumentBytes));
  if (const size_t at = value.find('\0'); at != std::string_view::npos)
    return Bad(field, QuoteValue(value) + " contains a NUL byte (byte " + Str(at) + ")");
  return {};
}

Status CheckEnvName(std::string_view field, std::string_view name) {
  const bool ok = !name.empty() && name.size() <= kMaxLabelBytes && name.find('=') == std::string_view::npos &&
                  FindControl(name) == std::string_view::npos;
  if (!ok) return Bad(field, QuoteValue(name) + " is not a variable name (not empty, no '=', no control characters)");
  return {};
}

Status CheckEnvValue(std::string_view field, std::string_view value) { return CheckArgument(field, value); }

Status CheckScript(std::string_view field, std::string_view text) {
  if (text.empty()) return Bad(field, "the script is empty");
  if (text.size() > kMaxScriptBytes) {
    return Bad(field,
               "the script has " + Str(text.size()) + " bytes; at most " + Str(kMaxScriptBytes) + " are accepted");
  }
  if (const size_t at = text.find('\0'); at != std::string_view::npos)
    return Bad(field, "the script contains a NUL byte (byte " + Str(at) + "): a binary file, not a script");
  return {};
}

Status CheckGpuShape(std::string_view prefix, uint64_t gpus, uint64_t nodes, uint64_t gpus_per_node) {
  const std::string p(prefix);
  const std::string range = " (1.." + Str(kMaxJobGpus) + ")";
  if (gpus > kMaxJobGpus) return Bad(p + "gpus", Str(gpus) + " is too many GPUs" + range);
  if (nodes > kMaxJobGpus) return Bad(p + "nodes", Str(nodes) + " is too many nodes" + range);
  if (gpus_per_node > kMaxJobGpus) return Bad(p + "gpus_per_node", Str(gpus_per_node) + " is too many GPUs" + range);
  if (nodes == 0) {
    if (gpus == 0) return Bad(p + "gpus", "must be at least 1 (got 0)");
    if (gpus_per_node != 0) return Bad(p + "gpus_per_node", Str(gpus_per_node) + " given without nodes");
    return {};
  }
  if (gpus_per_node == 0) return Bad(p + "gpus_per_node", "must be at least 1 when nodes is " + Str(nodes));
  const uint64_t total = nodes * gpus_per_node;
  if (total > kMaxJobGpus) {
    return Bad(p + "nodes", "nodes=" + Str(nodes) + " x gpus_per_node=" + Str(gpus_per_node) + " = " + Str(total) +
                                " is too many GPUs" + range);
  }
  if (gpus != 0 && gpus != total) {
    return Bad(p + "gpus", Str(gpus) + " is not nodes=" + Str(nodes) + " x gpus_per_node=" + Str(gpus_per_node) +
                               " = " + Str(total));
  }
  return {};
}

Status CheckElastic(std::string_view prefix, uint64_t gpus, uint64_t min_gpus, uint64_t nodes, ElasticStepRule rule,
                    uint64_t step) {
  const std::string p(prefix);
  if (min_gpus > gpus) return Bad(p + "min_gpus", Str(min_gpus) + " is more than gpus " + Str(gpus));
  if (min_gpus > 0 && nodes > 0)
    return Bad(p + "min_gpus", Str(min_gpus) + ": a node-shaped job (nodes=" + Str(nodes) + ") cannot be elastic");
  const bool elastic = min_gpus > 0 && min_gpus < gpus;
  if (rule != ElasticStepRule::kMultiple && step != 0) {
    return Bad(p + "elastic_step",
               Str(step) + " given without elastic_step_kind MULTIPLE (the step of multiples of N)");
  }
  if (rule == ElasticStepRule::kAny) return {};
  if (!elastic) {
    return Bad(p + "elastic_step_kind", "needs an elastic job (0 < min_gpus < gpus; got min_gpus=" + Str(min_gpus) +
                                            ", gpus=" + Str(gpus) + ")");
  }
  if (rule == ElasticStepRule::kMultiple) {
    if (step == 0) return Bad(p + "elastic_step", "must be at least 1 for multiples (got 0)");
    if (step > gpus)
      return Bad(p + "elastic_step", Str(step) + " is more than gpus " + Str(gpus) + " (1.." + Str(gpus) + ")");
    if (!HasSizeIn(min_gpus, gpus, rule, step)) {
      return Bad(p + "elastic_step",
                 "no multiple of " + Str(step) + " between min_gpus " + Str(min_gpus) + " and gpus " + Str(gpus));
    }
  } else if (!HasSizeIn(min_gpus, gpus, rule, 0)) {
    return Bad(p + "elastic_step_kind", "no power of two between min_gpus " + Str(min_gpus) + " and gpus " + Str(gpus));
  }
  return {};
}

Status CheckSeconds(std::string_view field, int64_t seconds) {
  if (seconds < 0) return Bad(field, "must not be negative (got " + std::to_string(seconds) + ")");
  if (seconds > kMaxJobSeconds) {
    return Bad(field, std::to_string(seconds) + "s is more than " + std::to_string(kMaxJobSeconds) + "s (365 days)");
  }
  return {};
}

Status CheckSignalNumber(std::string_view field, int64_t signal) {
  if (signal < 0 || signal > kMaxSignalNumber) {
    return Bad(field, "not a signal number (got " + std::to_string(signal) + "; 1.." +
                          std::to_string(kMaxSignalNumber) + ", or 0 for the default)");
  }
  return {};
}

}  // namespace phalanx
