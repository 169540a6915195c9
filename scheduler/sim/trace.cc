#include "sim/trace.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "util/duration.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace phalanx {
namespace {

// Lines with their 1-based numbers; a trailing '\r' is dropped, blank lines are skipped.
struct Line {
  std::string_view text;
  int number;
};
std::vector<Line> Lines(std::string_view text) {
  std::vector<Line> out;
  int n = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    std::string_view l = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++n;
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (Trim(l).empty()) continue;
    out.push_back({l, n});
  }
  return out;
}

std::string Where(std::string_view file, int line) { return std::string(file) + ":" + std::to_string(line); }

// Header-driven column lookup: name -> index (names compared case-insensitively).
class Columns {
 public:
  explicit Columns(const std::vector<std::string_view>& header) {
    for (size_t i = 0; i < header.size(); ++i) index_[ToLower(Trim(header[i]))] = i;
  }
  int Find(std::string_view name) const {
    auto it = index_.find(ToLower(name));
    return it == index_.end() ? -1 : static_cast<int>(it->second);
  }
  size_t size() const { return index_.size(); }

 private:
  std::map<std::string, size_t> index_;
};

void SortAndRebase(Trace& t) {
  std::stable_sort(t.jobs.begin(), t.jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.submit < b.submit; });
  if (t.jobs.empty()) return;
  const Time t0 = t.jobs.front().submit;
  for (TraceJob& j : t.jobs) j.submit -= t0;
}

Status CheckJob(const TraceJob& j, std::set<std::string>& seen, const std::string& where) {
  if (j.gpus == 0) return Fail(where, "job '" + j.id + "' asks for 0 GPUs");
  if (j.duration < 0) return Fail(where, "job '" + j.id + "' has a negative duration");
  if (!seen.insert(j.id).second) return Fail(where, "duplicate job id '" + j.id + "'");
  return {};
}

// gres/gpu=N, or the sum of gres/gpu:TYPE=N when there is no untyped count. 0 when none.
Result<uint32_t> GpusFromTres(std::string_view tres) {
  uint32_t untyped = 0, typed = 0;
  bool have_untyped = false;
  for (std::string_view item : Split(tres, ',')) {
    item = Trim(item);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key != "gres/gpu" && !key.starts_with("gres/gpu:")) continue;
    uint32_t n = 0;
    if (!ParseNumber(value, &n)) return Fail("", "'" + std::string(item) + "': GPU count is not a whole number");
    if (key == "gres/gpu") {
      untyped = n;
      have_untyped = true;
    } else {
      typed += n;
    }
  }
  return have_untyped ? untyped : typed;
}

}  // namespace

bool StatusIsFailure(std::string_view status) {
  const std::string s = ToUpper(status);
  for (const char* f : {"FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "KILLED", "PREEMPTED",
                        "BOOT_FAIL", "DEADLINE"}) {
    if (s.starts_with(f)) return true;
  }
  return false;
}

Result<int64_t> ParseIsoTime(std::string_view text) {
  const std::string_view s = Trim(text);
  auto bad = [&] { return Fail("", "'" + std::string(s) + "' is not a time YYYY-MM-DDTHH:MM:SS"); };
  if (s.size() != 19 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != ' ') || s[13] != ':' || s[16] != ':')
    return bad();
  int64_t y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0;
  if (!ParseNumber(s.substr(0, 4), &y) || !ParseNumber(s.substr(5, 2), &mo) || !ParseNumber(s.substr(8, 2), &d) ||
      !ParseNumber(s.substr(11, 2), &h) || !ParseNumber(s.substr(14, 2), &mi) || !ParseNumber(s.substr(17, 2), &se)) {
    return bad();
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return bad();
  // Days from the civil date (Howard Hinnant's algorithm), proleptic Gregorian, UTC.
  y -= mo <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = era * 146097 + doe - 719468;
  return days * 86400 + h * 3600 + mi * 60 + se;
}

Result<Duration> ParseSacctDuration(std::string_view text) {
  std::string_view s = Trim(text);
  const std::string up = ToUpper(s);
  if (up == "UNLIMITED" || up == "PARTITION_LIMIT" || up == "INVALID" || s.empty()) return Duration{0};
  // Seconds may carry a fraction (Elapsed of some versions): dropped.
  if (const size_t dot = s.rfind('.'); dot != std::string_view::npos && s.find(':', dot) == std::string_view::npos) {
    s = s.substr(0, dot);
  }
  return ParseSlurmDuration(s);
}

Result<Trace> ReadTraceCsv(std::string_view text, std::string_view filename) {
  Trace t;
  t.source = std::string(filename);
  const auto lines = Lines(text);
  if (lines.empty()) return Fail(std::string(filename), "empty trace (no header line)");
  const auto header = Split(lines[0].text, ',');
  const Columns cols(header);
  const int c_id = cols.Find("job_id"), c_submit = cols.Find("submit_s"), c_gpus = cols.Find("gpus"),
            c_dur = cols.Find("duration_s");
  const int c_user = cols.Find("user"), c_status = cols.Find("status");
  for (auto [c, name] : {std::pair{c_id, "job_id"}, {c_submit, "submit_s"}, {c_gpus, "gpus"}, {c_dur, "duration_s"}}) {
    if (c < 0)
      return Fail(Where(filename, lines[0].number),
                  std::string("header has no '") + name + "' column (need job_id,submit_s,gpus,duration_s)");
  }
  std::set<std::string> seen;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string where = Where(filename, lines[i].number);
    const auto f = Split(lines[i].text, ',');
    if (f.size() != header.size()) {
      return Fail(where, std::to_string(f.size()) + " fields, the header has " + std::to_string(header.size()));
    }
    TraceJob j;
    j.line = lines[i].number;
    j.id = std::string(Trim(f[c_id]));
    if (j.id.empty()) return Fail(where, "empty job_id");
    if (!ParseNumber(Trim(f[c_submit]), &j.submit) || j.submit < 0)
      return Fail(where, "submit_s: '" + std::string(f[c_submit]) + "' is not a whole number >= 0");
    if (!ParseNumber(Trim(f[c_gpus]), &j.gpus))
      return Fail(where, "gpus: '" + std::string(f[c_gpus]) + "' is not a whole number");
    if (!ParseNumber(Trim(f[c_dur]), &j.duration))
      return Fail(where, "duration_s: '" + std::string(f[c_dur]) + "' is not a whole number");
    j.user = c_user >= 0 ? std::string(Trim(f[c_user])) : "NA";
    j.status = c_status >= 0 ? ToUpper(Trim(f[c_status])) : "NA";
    if (j.user.empty()) j.user = "NA";
    if (j.status.empty()) j.status = "NA";
    PHX_RETURN_IF_ERROR(CheckJob(j, seen, where));
    t.jobs.push_back(std::move(j));
  }
  SortAndRebase(t);
  return t;
}

Result<Trace> ReadSacct(std::string_view text, std::string_view filename) {
  Trace t;
  t.source = std::string(filename);
  const auto lines = Lines(text);
  if (lines.empty()) return Fail(std::string(filename), "empty sacct output (no header line)");
  const auto header = Split(lines[0].text, '|');
  const Columns cols(header);
  const int c_id = cols.Find("JobID"), c_submit = cols.Find("Submit"), c_start = cols.Find("Start"),
            c_end = cols.Find("End");
  const int c_elapsed = cols.Find("Elapsed"), c_user = cols.Find("User"), c_state = cols.Find("State"),
            c_limit = cols.Find("Timelimit");
  int c_tres = cols.Find("AllocTRES");
  const int c_req = cols.Find("ReqTRES");
  const std::string hwhere = Where(filename, lines[0].number);
  if (c_id < 0 || c_submit < 0 || c_start < 0)
    return Fail(hwhere, "sacct header needs JobID, Submit and Start columns");
  if (c_end < 0 && c_elapsed < 0) return Fail(hwhere, "sacct header needs End or Elapsed");
  if (c_tres < 0 && c_req < 0) return Fail(hwhere, "sacct header needs AllocTRES or ReqTRES (for gres/gpu=N)");
  std::set<std::string> seen;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string where = Where(filename, lines[i].number);
    auto f = Split(lines[i].text, '|');
    // --parsable (not parsable2) ends every line with '|'.
    if (f.size() == header.size() + 1 && f.back().empty()) f.pop_back();
    if (f.size() != header.size()) {
      return Fail(where, std::to_string(f.size()) + " fields, the header has " + std::to_string(header.size()));
    }
    const std::string_view id = Trim(f[c_id]);
    if (id.empty()) return Fail(where, "empty JobID");
    if (id.find('.') != std::string_view::npos) {
      ++t.skipped_steps;
      continue;
    }
    TraceJob j;
    j.line = lines[i].number;
    j.id = std::string(id);
    j.user = c_user >= 0 && !Trim(f[c_user]).empty() ? std::string(Trim(f[c_user])) : "NA";
    j.status = c_state >= 0 ? ToUpper(Trim(f[c_state])) : "NA";
    if (const size_t sp = j.status.find(' '); sp != std::string::npos) j.status.resize(sp);  // "CANCELLED by 123"
    auto gpus = GpusFromTres(c_tres >= 0 ? f[c_tres] : std::string_view());
    if (!gpus) return Fail(where, "AllocTRES: " + gpus.error().message);
    if (*gpus == 0 && c_req >= 0) {
      gpus = GpusFromTres(f[c_req]);
      if (!gpus) return Fail(where, "ReqTRES: " + gpus.error().message);
    }
    if (*gpus == 0) {
      ++t.skipped_no_gpu;
      continue;
    }
    j.gpus = *gpus;
    auto submit = ParseIsoTime(f[c_submit]);
    if (!submit) return Fail(where, "Submit: " + submit.error().message);
    j.submit = *submit;
    const std::string start_up = ToUpper(Trim(f[c_start]));
    if (start_up == "UNKNOWN" || start_up == "NONE" || start_up.empty()) {
      ++t.skipped_not_run;
      continue;
    }
    auto start = ParseIsoTime(f[c_start]);
    if (!start) return Fail(where, "Start: " + start.error().message);
    if (c_end >= 0) {
      const std::string end_up = ToUpper(Trim(f[c_end]));
      if (end_up == "UNKNOWN" || end_up == "NONE" || end_up.empty()) {
        ++t.skipped_not_run;
        continue;
      }
      auto end = ParseIsoTime(f[c_end]);
      if (!end) return Fail(where, "End: " + end.error().message);
      j.duration = *end - *start;
    } else {
      auto e = ParseSacctDuration(f[c_elapsed]);
      if (!e) return Fail(where, "Elapsed: " + e.error().message);
      j.duration = *e;
    }
    if (c_limit >= 0) {
      auto l = ParseSacctDuration(f[c_limit]);
      if (!l) return Fail(where, "Timelimit: " + l.error().message);
      j.timelimit = *l;
    }
    PHX_RETURN_IF_ERROR(CheckJob(j, seen, where));
    t.jobs.push_back(std::move(j));
  }
  SortAndRebase(t);
  return t;
}

Trace WindowTrace(Trace trace, Time from, Time to) {
  std::vector<TraceJob> kept;
  for (TraceJob& j : trace.jobs) {
    if (j.submit >= from && j.submit < to) {
      j.submit -= from;
      kept.push_back(std::move(j));
    }
  }
  trace.jobs = std::move(kept);
  return trace;
}

Trace ScaleArrivals(Trace trace, double factor) {
  if (factor <= 0) return trace;
  for (TraceJob& j : trace.jobs) j.submit = static_cast<Time>(std::floor(static_cast<double>(j.submit) / factor));
  return trace;
}

Result<Trace> ReadTrace(std::string_view text, std::string_view filename) {
  const auto lines = Lines(text);
  if (!lines.empty() && lines[0].text.find('|') != std::string_view::npos) return ReadSacct(text, filename);
  return ReadTraceCsv(text, filename);
}

}  // namespace phalanx
