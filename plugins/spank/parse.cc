// The pure parsers behind parse.h. Signals, durations and counts are gsub's own
// (cli/user/signal_names.h, duration.h, options.h), so `--phx-checkpoint=USR1@5m` means what
// `gsub --checkpoint-signal USR1@5m` means.
#include "parse.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>

#include "duration.h"
#include "options.h"
#include "signal_names.h"
#include "util/hostlist.h"

namespace {

using phalanx::cli::ParseCount;
using phalanx::cli::ParseDuration;
using phalanx::cli::ParseSignal;

constexpr unsigned kMaxGpus = 1u << 20;  // as gsub's -G

// Every message ends here, and most quote what the user typed: control characters (a newline
// would forge a line of slurmd's log, ESC reach a terminal, NUL cut the text) are written as \xNN.
int Fail(char* err, size_t errlen, const std::string& message) {
  if (err == nullptr || errlen == 0) return -1;
  std::string shown;
  for (const char c : message) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      shown += hex;
    } else {
      shown += c;
    }
  }
  std::snprintf(err, errlen, "%s", shown.c_str());
  return -1;
}

std::string Quote(std::string_view s) { return "'" + std::string(s) + "'"; }

// Runs `body` and turns an escaping exception (std::bad_alloc) into an error: nothing may cross
// the C boundary into slurmstepd.
template <typename F>
int Guard(char* err, size_t errlen, F&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return Fail(err, errlen, std::string("internal error: ") + e.what());
  } catch (...) {
    return Fail(err, errlen, "internal error");
  }
}

struct LevelName {
  std::string_view name;
  phx_level level;
};
constexpr LevelName kLevels[] = {
    {"any", PHX_LEVEL_ANY},    {"node", PHX_LEVEL_NODE}, {"nvlink", PHX_LEVEL_NVLINK},
    {"nvl", PHX_LEVEL_NVLINK}, {"leaf", PHX_LEVEL_LEAF}, {"spine", PHX_LEVEL_SPINE},
};

int ParseTopology(std::string_view text, phx_topology* out, const std::string& what, char* err, size_t errlen) {
  std::string_view level = text;
  int prefer = 0;
  if (const size_t colon = level.find(':'); colon != std::string_view::npos) {
    const std::string_view mode = level.substr(colon + 1);
    if (mode == "prefer") {
      prefer = 1;
    } else if (mode != "require") {
      return Fail(err, errlen, what + ": unknown mode " + Quote(mode) + " (prefer or require)");
    }
    level = level.substr(0, colon);
  }
  for (const LevelName& l : kLevels) {
    if (l.name == level) {
      *out = phx_topology{l.level, prefer};
      return 0;
    }
  }
  return Fail(err, errlen,
              what + ": " + Quote(level) + " is not a level (node, nvlink, leaf, spine or any, with :prefer)");
}

bool IsClassName(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

// key=N with N in [lo, hi].
int ParseInt(std::string_view key, std::string_view value, long lo, long hi, int* out, char* err, size_t errlen) {
  auto n = ParseCount(value, static_cast<uint64_t>(lo), static_cast<uint64_t>(hi));
  if (!n) {
    return Fail(err, errlen,
                "plugstack.conf: " + std::string(key) + "=" + std::string(value) + ": not a whole number in " +
                    std::to_string(lo) + ".." + std::to_string(hi));
  }
  *out = static_cast<int>(*n);
  return 0;
}

int CopyString(std::string_view key, std::string_view value, char* out, size_t size, bool absolute, char* err,
               size_t errlen) {
  const std::string what = "plugstack.conf: " + std::string(key) + "=" + std::string(value);
  if (value.empty()) return Fail(err, errlen, what + ": empty value");
  if (absolute && value[0] != '/') return Fail(err, errlen, what + ": not an absolute path");
  if (value.size() >= size) return Fail(err, errlen, what + ": longer than " + std::to_string(size - 1) + " bytes");
  std::memcpy(out, value.data(), value.size());
  out[value.size()] = '\0';
  return 0;
}

constexpr const char* kKeys =
    "socket, timeout_ms, default_topology, fallback_delay_s, checkpoint_dir, report, munge_socket, gpu_topology";

}  // namespace

extern "C" {

int phx_parse_topology(const char* text, phx_topology* out, char* err, size_t errlen) {
  return Guard(err, errlen, [&] {
    const std::string_view t = text ? text : "";
    return ParseTopology(t, out, "--phx-topology=" + std::string(t), err, errlen);
  });
}

int phx_parse_elastic(const char* text, phx_elastic* out, char* err, size_t errlen) {
  return Guard(err, errlen, [&] {
    const std::string_view t = text ? text : "";
    const std::string what = "--phx-elastic=" + std::string(t);
    const size_t colon = t.find(':');
    if (colon == std::string_view::npos) return Fail(err, errlen, what + ": not MIN:MAX (GPUs, e.g. 8:64)");
    auto lo = ParseCount(t.substr(0, colon), 1, kMaxGpus);
    auto hi = ParseCount(t.substr(colon + 1), 1, kMaxGpus);
    if (!lo || !hi) return Fail(err, errlen, what + ": " + (lo ? hi : lo).error().message + " (MIN:MAX GPUs)");
    if (*lo > *hi) return Fail(err, errlen, what + ": the minimum is above the maximum");
    *out = phx_elastic{static_cast<unsigned>(*lo), static_cast<unsigned>(*hi)};
    return 0;
  });
}

int phx_parse_checkpoint(const char* text, phx_checkpoint* out, char* err, size_t errlen) {
  return Guard(err, errlen, [&] {
    const std::string_view t = text ? text : "";
    const std::string what = "--phx-checkpoint=" + std::string(t);
    std::string_view sig = t;
    long long seconds = 0;
    if (const size_t at = sig.find('@'); at != std::string_view::npos) {
      const std::string_view when = sig.substr(at + 1);
      sig = sig.substr(0, at);
      // As gsub: a bare number is seconds (sbatch --signal=SIG@SECS); 90s, 5m, 1h also work.
      const bool has_unit = !when.empty() && (when.back() < '0' || when.back() > '9');
      if (has_unit) {
        auto s = ParseDuration(when);
        if (!s) return Fail(err, errlen, what + ": " + s.error().message);
        seconds = *s;
      } else {
        auto s = ParseCount(when, 1, 86400);
        if (!s) return Fail(err, errlen, what + ": " + Quote(when) + " is not a number of seconds (1..86400)");
        seconds = static_cast<long long>(*s);
      }
    }
    auto n = ParseSignal(sig);
    if (!n) return Fail(err, errlen, what + ": " + n.error().message);
    *out = phx_checkpoint{*n, seconds};
    return 0;
  });
}

int phx_parse_class(const char* text, char out[PHX_CLASS_MAX], char* err, size_t errlen) {
  return Guard(err, errlen, [&] {
    const std::string_view t = text ? text : "";
    const std::string what = "--phx-class=" + std::string(t);
    if (!IsClassName(t)) return Fail(err, errlen, what + ": not a class name (low, normal, high, urgent, ...)");
    if (t.size() >= PHX_CLASS_MAX) {
      return Fail(err, errlen, what + ": longer than " + std::to_string(PHX_CLASS_MAX - 1) + " characters");
    }
    std::memcpy(out, t.data(), t.size());
    out[t.size()] = '\0';
    return 0;
  });
}

int phx_parse_bool(const char* text, int* out, char* err, size_t errlen) {
  return Guard(err, errlen, [&] {
    const std::string_view t = text ? text : "";
    for (const char* yes : {"1", "true", "yes", "y"}) {
      if (t == yes) return *out = 1, 0;
    }
    for (const char* no : {"0", "false", "no", "n"}) {
      if (t == no) return *out = 0, 0;
    }
    return Fail(err, errlen, Quote(t) + " is not a boolean (true or false)");
  });
}

int phx_hostlist_nth(const char* list, unsigned index, char* out, size_t outlen) {
  char err[8];
  return Guard(err, sizeof err, [&] {
    auto names = phalanx::ExpandHostlist(list ? list : "", "hostlist");
    if (!names || index >= names->size() || (*names)[index].size() >= outlen) return -1;
    std::memcpy(out, (*names)[index].c_str(), (*names)[index].size() + 1);
    return 0;
  });
}

const char* phx_level_name(phx_level level) {
  for (const LevelName& l : kLevels) {
    if (l.level == level) return l.name.data();  // the literals are NUL-terminated
  }
  return "";
}

int phx_config_parse(phx_config* out, int ac, const char* const* av, char* err, size_t errlen) {
  return Guard(err, errlen, [&] {
    phx_config c;
    std::memset(&c, 0, sizeof c);
    std::snprintf(c.socket, sizeof c.socket, "%s", PHX_DEFAULT_SOCKET);
    c.timeout_ms = PHX_DEFAULT_TIMEOUT_MS;
    c.default_topology = phx_topology{PHX_LEVEL_UNSET, 0};
    c.fallback_delay_s = PHX_DEFAULT_FALLBACK_DELAY_S;
    std::snprintf(c.checkpoint_dir, sizeof c.checkpoint_dir, "%s", PHX_DEFAULT_CHECKPOINT_DIR);
    c.report = 1;
    for (int i = 0; i < ac; ++i) {
      const std::string_view arg = av[i] ? av[i] : "";
      const size_t eq = arg.find('=');
      if (eq == std::string_view::npos || eq == 0) {
        return Fail(err, errlen, "plugstack.conf: " + Quote(arg) + " is not key=value (keys: " + kKeys + ")");
      }
      const std::string_view key = arg.substr(0, eq), value = arg.substr(eq + 1);
      int rc = 0;
      if (key == "socket") {  // a Unix socket's path, or HOST:PORT (TCP)
        const size_t colon = value.rfind(':');
        const bool tcp = !value.empty() && value[0] != '/' && colon != std::string_view::npos && colon > 0 &&
                         colon + 1 < value.size() && ParseCount(value.substr(colon + 1), 1, 65535).has_value();
        if (!value.empty() && value[0] != '/' && !tcp)
          return Fail(err, errlen,
                      "plugstack.conf: socket=" + std::string(value) + ": not an absolute path or HOST:PORT");
        rc = CopyString(key, value, c.socket, sizeof c.socket, false, err, errlen);
      } else if (key == "gpu_topology") {
        rc = CopyString(key, value, c.gpu_topology, sizeof c.gpu_topology, true, err, errlen);
      } else if (key == "munge_socket") {
        rc = CopyString(key, value, c.munge_socket, sizeof c.munge_socket, true, err, errlen);
      } else if (key == "timeout_ms") {
        rc = ParseInt(key, value, 1, 10000, &c.timeout_ms, err, errlen);
      } else if (key == "fallback_delay_s") {
        rc = ParseInt(key, value, 0, 3600, &c.fallback_delay_s, err, errlen);
      } else if (key == "checkpoint_dir") {
        rc = CopyString(key, value, c.checkpoint_dir, sizeof c.checkpoint_dir, true, err, errlen);
      } else if (key == "default_topology") {
        rc = ParseTopology(value, &c.default_topology, "plugstack.conf: default_topology=" + std::string(value), err,
                           errlen);
      } else if (key == "report") {
        char why[128];
        rc = phx_parse_bool(std::string(value).c_str(), &c.report, why, sizeof why);
        if (rc != 0) return Fail(err, errlen, "plugstack.conf: report=" + std::string(value) + ": " + why);
      } else {
        return Fail(err, errlen, "plugstack.conf: unknown key " + Quote(key) + " (keys: " + kKeys + ")");
      }
      if (rc != 0) return rc;
    }
    *out = c;
    return 0;
  });
}

}  // extern "C"
