#include "job_table.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <set>

#include "duration.h"
#include "options.h"
#include "util/job_array.h"
#include "util/printable.h"

namespace phalanx::cli {
namespace {

struct Field {
  char letter;
  std::string_view header;
};

constexpr Field kFields[] = {
    {'i', "JOBID"},
    {'j', "NAME"},
    {'u', "USER"},
    {'a', "ACCOUNT"},
    {'q', "CLASS"},
    {'Q', "PRIORITY"},
    {'T', "STATE"},
    {'t', "ST"},
    {'G', "GPUS"},
    {'D', "NODES"},
    {'M', "TIME"},
    {'L', "TIME_LEFT"},
    {'l', "TIME_LIMIT"},
    {'S', "START"},
    {'V', "SUBMIT"},
    {'e', "END"},
    {'N', "NODELIST"},
    {'r', "REASON"},
    {'R', "NODELIST(REASON)"},
    {'b', "BUSBW"},
    {'P', "PARTITION"},
    {'Y', "PLACEMENT"},
    {'p', "PRIORITY"},
    {'Z', "WORK_DIR"},
    {'E', "DEPENDENCY"},
};

std::string_view Header(char letter) {
  for (const Field& f : kFields) {
    if (f.letter == letter) return f.header;
  }
  return {};
}

bool Active(v1::JobState s) { return s == v1::JOB_STATE_RUNNING || s == v1::JOB_STATE_CHECKPOINTING; }

int64_t Limit(const v1::Job& job) { return job.walltime_s() > 0 ? job.walltime_s() : job.spec().walltime_s(); }

int64_t Elapsed(const v1::Job& job, int64_t now) {
  if (job.start_time() <= 0) return 0;
  if (Active(job.state())) return now - job.start_time();
  if (IsFinished(job.state()) && job.end_time() >= job.start_time()) return job.end_time() - job.start_time();
  return 0;
}

std::string Gpus(const v1::Job& job) {
  if (job.gpus_size() > 0) return std::to_string(job.gpus_size());
  const v1::JobSpec& s = job.spec();
  if (s.min_gpus() > 0 && s.min_gpus() < s.gpus()) return std::to_string(s.min_gpus()) + ":" + std::to_string(s.gpus());
  return std::to_string(s.gpus());
}

std::string Nodes(const v1::Job& job) {
  if (job.gpus_size() > 0) {
    std::set<std::string_view> nodes;
    for (const v1::GpuRef& g : job.gpus()) nodes.insert(g.node());
    return std::to_string(nodes.size());
  }
  return job.spec().nodes() > 0 ? std::to_string(job.spec().nodes()) : "-";
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

Result<std::vector<JobField>> ParseJobFormat(std::string_view format) {
  std::vector<JobField> out;
  std::string literal;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      literal += format[i];
      continue;
    }
    const size_t start = i;
    if (i + 1 < format.size() && format[i + 1] == '%') {
      literal += '%';
      ++i;
      continue;
    }
    JobField f;
    if (i + 1 < format.size() && format[i + 1] == '.') {
      f.right = true;
      ++i;
    }
    size_t digits_at = i + 1;
    while (i + 1 < format.size() && format[i + 1] >= '0' && format[i + 1] <= '9') ++i;
    if (i + 1 > digits_at) {
      auto w = ParseCount(format.substr(digits_at, i + 1 - digits_at), 1, 1000);
      if (!w) return Fail("", "'" + std::string(format.substr(start, i + 1 - start)) + "': width " + w.error().message);
      f.width = *w;
    }
    if (i + 1 >= format.size())
      return Fail("", "'" + std::string(format.substr(start)) + "' at the end names no field");
    f.letter = format[++i];
    if (Header(f.letter).empty()) {
      return Fail("", "'" + std::string(format.substr(start, i + 1 - start)) + "' is not a field (see gq --help)");
    }
    f.literal = std::move(literal);
    literal.clear();
    out.push_back(std::move(f));
  }
  if (!literal.empty()) out.push_back(JobField{std::move(literal), 0, 0, false});
  return out;
}

void CollapseArrayTasks(std::vector<v1::Job>& jobs) {
  std::map<uint64_t, size_t> first;  // array -> the row that stands for its pending tasks
  std::map<uint64_t, std::vector<uint32_t>> tasks;
  std::vector<v1::Job> out;
  out.reserve(jobs.size());
  for (v1::Job& job : jobs) {
    if (job.array_job_id() == 0 || job.state() != v1::JOB_STATE_PENDING) {
      out.push_back(std::move(job));
      continue;
    }
    tasks[job.array_job_id()].push_back(job.array_task_id());
    if (first.emplace(job.array_job_id(), out.size()).second) out.push_back(std::move(job));
  }
  for (auto& [array, row] : first) {
    std::vector<uint32_t>& t = tasks[array];
    if (t.size() < 2) continue;
    std::sort(t.begin(), t.end());
    std::string text = FormatArrayTasks(t);
    const std::string& spec = out[row].spec().array();
    if (const size_t pct = spec.find('%'); pct != std::string::npos) text += spec.substr(pct);
    out[row].set_array_task_str(text);
  }
  jobs = std::move(out);
}

void SortJobs(std::vector<v1::Job>& jobs) {
  auto group = [](const v1::Job& j) { return Active(j.state()) ? 0 : j.state() == v1::JOB_STATE_PENDING ? 1 : 2; };
  std::stable_sort(jobs.begin(), jobs.end(), [&](const v1::Job& a, const v1::Job& b) {
    if (group(a) != group(b)) return group(a) < group(b);
    if (group(a) == 1 && a.priority() != b.priority()) return a.priority() > b.priority();
    return a.id() < b.id();
  });
}

std::string JobFieldValue(const v1::Job& job, char letter, int64_t now) {
  const v1::JobSpec& s = job.spec();
  const bool pending = job.state() == v1::JOB_STATE_PENDING;
  switch (letter) {
    case 'i':
      if (job.has_slurm()) return "slurm:" + std::to_string(job.slurm().job_id());  // Slurm schedules it
      if (job.array_job_id() == 0) return std::to_string(job.id());
      return std::to_string(job.array_job_id()) + "_" +
             (job.array_task_str().empty() ? std::to_string(job.array_task_id()) : "[" + job.array_task_str() + "]");
    case 'j': return s.name();
    case 'u': return job.user();
    case 'a': return s.account().empty() ? "-" : s.account();
    case 'q': return s.priority_class().empty() ? "-" : s.priority_class();
    case 'Q': return Fixed(job.priority(), 0);
    case 'T': return job.has_slurm() ? job.slurm().state() : std::string(StateName(job.state()));
    case 't': return std::string(StateShort(job.state()));
    case 'G': return Gpus(job);
    case 'D': return Nodes(job);
    case 'M': return FormatDuration(Elapsed(job, now));
    case 'L': {
      if (IsFinished(job.state())) return "-";
      const int64_t limit = Limit(job);
      // Slurm's own job: to its expected end (Slurm's EndTime), as squeue's TIME_LEFT.
      if (job.has_slurm() && Active(job.state()) && job.end_time() > 0)
        return FormatDuration(std::max<int64_t>(job.end_time() - now, 0));
      if (limit <= 0) return "N/A";
      return FormatDuration(Active(job.state()) ? limit - Elapsed(job, now) : limit);
    }
    case 'l': return Limit(job) > 0 ? FormatDuration(Limit(job)) : "N/A";
    case 'S': return FormatTime(pending ? job.predicted_start() : job.start_time());
    case 'V': return FormatTime(job.submit_time());
    case 'e': return FormatTime(job.end_time());
    case 'N': return job.nodelist();
    case 'r': return job.reason().empty() ? (job.held() ? "Held" : "None") : job.reason();
    case 'R':
      if (!pending && !job.nodelist().empty()) return job.nodelist();
      if (!pending && job.reason().empty()) return "";
      return ReasonText(job.reason(), job.reason_detail(), job.held());
    case 'b': return job.busbw_gbs() > 0 ? Fixed(job.busbw_gbs(), 1) : "-";
    case 'P': return job.partition().empty() ? "-" : job.partition();
    case 'Y': return FormatGpuRefs(job.gpus());
    case 'p': return Fixed(job.priority(), 0);
    case 'Z': return s.working_dir();
    case 'E': {
      if (!s.dependency().empty()) return s.dependency();
      if (s.after_ok_size() == 0) return "-";
      std::string out = "afterok";
      for (uint64_t id : s.after_ok()) out += ":" + std::to_string(id);
      return out;
    }
    default: return "";
  }
}

std::string FormatJobTable(const std::vector<v1::Job>& jobs, const std::vector<JobField>& format, int64_t now,
                           bool header) {
  // Cells first (Printable: a user's control characters are shown, not sent to the terminal),
  // then the widths in terminal columns of the fields without one.
  std::vector<std::vector<std::string>> rows;
  if (header) {
    rows.emplace_back();
    for (const JobField& f : format) rows.back().emplace_back(f.letter ? Header(f.letter) : "");
  }
  for (const v1::Job& job : jobs) {
    rows.emplace_back();
    for (const JobField& f : format)
      rows.back().push_back(f.letter ? Printable(JobFieldValue(job, f.letter, now)) : "");
  }
  std::vector<size_t> widths(format.size(), 0);
  for (size_t c = 0; c < format.size(); ++c) {
    if (format[c].letter == 0) continue;
    if (format[c].width > 0) {
      widths[c] = format[c].width;
      continue;
    }
    for (const auto& row : rows) widths[c] = std::max(widths[c], DisplayWidth(row[c]));
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < format.size(); ++c) {
      line += Printable(format[c].literal);
      if (format[c].letter) line += FitToWidth(row[c], widths[c], format[c].right);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string_view StateName(v1::JobState state) {
  switch (state) {
    case v1::JOB_STATE_PENDING: return "PENDING";
    case v1::JOB_STATE_RUNNING: return "RUNNING";
    case v1::JOB_STATE_CHECKPOINTING: return "CHECKPOINTING";
    case v1::JOB_STATE_COMPLETED: return "COMPLETED";
    case v1::JOB_STATE_FAILED: return "FAILED";
    case v1::JOB_STATE_CANCELLED: return "CANCELLED";
    case v1::JOB_STATE_KILLED: return "KILLED";
    default: return "UNKNOWN";
  }
}

std::string_view StateShort(v1::JobState state) {
  switch (state) {
    case v1::JOB_STATE_PENDING: return "PD";
    case v1::JOB_STATE_RUNNING: return "R";
    case v1::JOB_STATE_CHECKPOINTING: return "CK";
    case v1::JOB_STATE_COMPLETED: return "CD";
    case v1::JOB_STATE_FAILED: return "F";
    case v1::JOB_STATE_CANCELLED: return "CA";
    case v1::JOB_STATE_KILLED: return "KI";
    default: return "?";
  }
}

bool IsFinished(v1::JobState state) {
  return state == v1::JOB_STATE_COMPLETED || state == v1::JOB_STATE_FAILED || state == v1::JOB_STATE_CANCELLED ||
         state == v1::JOB_STATE_KILLED;
}

Result<v1::JobState> ParseState(std::string_view text) {
  std::string upper;
  for (char c : text) upper += static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  for (int s = v1::JOB_STATE_PENDING; s <= v1::JOB_STATE_KILLED; ++s) {
    const auto state = static_cast<v1::JobState>(s);
    if (upper == StateName(state) || upper == StateShort(state)) return state;
  }
  return Fail("", "'" + std::string(text) +
                      "' is not a job state (PENDING/PD, RUNNING/R, CHECKPOINTING/CK, COMPLETED/CD, FAILED/F, "
                      "CANCELLED/CA, KILLED/KI)");
}

std::string ReasonText(std::string_view reason, std::string_view detail, bool held) {
  if (reason.empty()) return held ? "(Held)" : "(None)";
  if (detail.empty()) return "(" + std::string(reason) + ")";
  if (reason == "ReservedFor") return "(ReservedFor " + std::string(detail) + ")";
  return "(" + std::string(reason) + ": " + std::string(detail) + ")";
}

std::string FormatTime(int64_t unix_seconds) {
  if (unix_seconds <= 0) return "N/A";
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  if (localtime_r(&t, &tm) == nullptr) return "N/A";
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

std::string FormatGpuRefs(const google::protobuf::RepeatedPtrField<v1::GpuRef>& gpus) {
  if (gpus.empty()) return "-";
  // Nodes in first-seen order; indices sorted per node.
  std::vector<std::pair<std::string, std::vector<uint32_t>>> nodes;
  for (const v1::GpuRef& g : gpus) {
    auto it = std::find_if(nodes.begin(), nodes.end(), [&](const auto& n) { return n.first == g.node(); });
    if (it == nodes.end()) it = nodes.insert(nodes.end(), {g.node(), {}});
    it->second.push_back(g.index());
  }
  std::string out;
  for (auto& [node, idx] : nodes) {
    std::sort(idx.begin(), idx.end());
    idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
    if (!out.empty()) out += ",";
    out += node + ":";
    for (size_t i = 0; i < idx.size();) {
      size_t j = i;
      while (j + 1 < idx.size() && idx[j + 1] == idx[j] + 1) ++j;
      if (i > 0) out += "+";
      out += std::to_string(idx[i]);
      if (j > i) out += "-" + std::to_string(idx[j]);
      i = j + 1;
    }
  }
  return out;
}

namespace {

struct LongField {
  std::string_view name;
  char letter;
};
constexpr LongField kLongFields[] = {
    {"jobid", 'i'},        {"name", 'j'},         {"username", 'u'},   {"account", 'a'},      {"qos", 'q'},
    {"priority", 'p'},     {"prioritylong", 'Q'}, {"state", 'T'},      {"statecompact", 't'}, {"numgpus", 'G'},
    {"tres-per-job", 'G'}, {"numnodes", 'D'},     {"timeused", 'M'},   {"timeleft", 'L'},     {"timelimit", 'l'},
    {"starttime", 'S'},    {"submittime", 'V'},   {"endtime", 'e'},    {"nodelist", 'N'},     {"reason", 'r'},
    {"reasonlist", 'R'},   {"partition", 'P'},    {"schednodes", 'Y'}, {"workdir", 'Z'},      {"dependency", 'E'},
    {"busbw", 'b'},
};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Numbers compare as numbers ("10" after "9"), the rest as text.
bool Less(const std::string& a, const std::string& b) {
  double x = 0, y = 0;
  char* ea = nullptr;
  char* eb = nullptr;
  x = std::strtod(a.c_str(), &ea);
  y = std::strtod(b.c_str(), &eb);
  if (!a.empty() && !b.empty() && *ea == '\0' && *eb == '\0') return x < y;
  return a < b;
}

}  // namespace

Result<std::string> LongFormat(std::string_view spec) {
  std::string out;
  size_t start = 0;
  for (size_t i = 0; i <= spec.size(); ++i) {
    if (i < spec.size() && spec[i] != ',') continue;
    std::string_view item = spec.substr(start, i - start);
    start = i + 1;
    if (item.empty()) continue;
    std::string_view width;
    if (const size_t colon = item.find(':'); colon != std::string_view::npos) {
      width = item.substr(colon + 1);
      item = item.substr(0, colon);
    }
    const std::string name = Lower(item);
    const LongField* f = nullptr;
    for (const LongField& l : kLongFields) {
      if (l.name == name) f = &l;
    }
    if (f == nullptr) {
      std::string known;
      for (const LongField& l : kLongFields) known += (known.empty() ? "" : ", ") + std::string(l.name);
      return Fail("", "unknown field '" + std::string(item) + "' (known, any case: " + known + ")");
    }
    const bool right = width.starts_with('.');
    if (right) width.remove_prefix(1);
    if (!width.empty() && !std::all_of(width.begin(), width.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return Fail("", "field '" + std::string(item) + "': width '" + std::string(width) + "' is not a number");
    out += (out.empty() ? "" : "  ") + std::string("%") + (right ? "." : "") + std::string(width) + f->letter;
  }
  if (out.empty()) return Fail("", "'" + std::string(spec) + "' names no field");
  return out;
}

Status SortJobsBy(std::vector<v1::Job>& jobs, std::string_view spec, int64_t now) {
  struct Key {
    char letter;
    bool descending;
  };
  std::vector<Key> keys;
  size_t start = 0;
  for (size_t i = 0; i <= spec.size(); ++i) {
    if (i < spec.size() && spec[i] != ',') continue;
    std::string_view item = spec.substr(start, i - start);
    start = i + 1;
    if (item.empty()) continue;
    bool desc = false;
    if (item.front() == '-' || item.front() == '+') {
      desc = item.front() == '-';
      item.remove_prefix(1);
    }
    if (item.size() != 1 || Header(item[0]).empty())
      return Fail("", "'" + std::string(item) + "' is not a field letter (i, j, u, t, T, p, P, S, ... as in -o)");
    keys.push_back({item[0], desc});
  }
  if (keys.empty()) return Fail("", "'" + std::string(spec) + "' names no field");
  std::stable_sort(jobs.begin(), jobs.end(), [&](const v1::Job& a, const v1::Job& b) {
    for (const Key& k : keys) {
      const std::string x = JobFieldValue(a, k.letter, now), y = JobFieldValue(b, k.letter, now);
      if (x == y) continue;
      return k.descending ? Less(y, x) : Less(x, y);
    }
    return false;
  });
  return {};
}

}  // namespace phalanx::cli
