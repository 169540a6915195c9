#include "service/step_report.h"

#include <set>

#include "util/numbers.h"
#include "util/printable.h"
#include "util/strings.h"

namespace phalanx::service {
namespace {

bool Clean(std::string_view v) {
  for (unsigned char c : v) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

}  // namespace

std::string_view StepReportKindName(StepReport::Kind k) {
  switch (k) {
    case StepReport::Kind::kStart: return "start";
    case StepReport::Kind::kEnd: return "end";
    case StepReport::Kind::kCheckpoint: return "checkpoint";
  }
  return "?";
}

Result<StepReport> ParseStepReport(std::string_view payload) {
  std::vector<std::string_view> lines = Split(payload, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();  // a final newline
  if (lines.empty() || lines[0] != kStepReportMagic)
    return Fail("report line 1", "not a step report (expected '" + std::string(kStepReportMagic) + "')");
  StepReport r;
  std::set<std::string, std::less<>> seen;
  bool have_kind = false, have_epoch = false, have_path = false;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string where = "report line " + std::to_string(i + 1);
    const std::string_view line = lines[i];
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) return Fail(where, "'" + Printable(line) + "' is not key=value");
    const std::string_view key = line.substr(0, eq), value = line.substr(eq + 1);
    if (!seen.insert(std::string(key)).second) return Fail(where, "key '" + Printable(key) + "' given twice");
    auto bad = [&](std::string_view why) {
      return Fail(where, std::string(key) + "='" + Printable(value) + "': " + std::string(why));
    };
    if (!Clean(value)) return bad("control characters");
    if (key == "kind") {
      if (value == "start") r.kind = StepReport::Kind::kStart;
      else if (value == "end") r.kind = StepReport::Kind::kEnd;
      else if (value == "checkpoint") r.kind = StepReport::Kind::kCheckpoint;
      else return bad("not a kind (start, end or checkpoint)");
      have_kind = true;
    } else if (key == "job") {
      auto n = ParseNumber<uint32_t>(value);
      if (!n || *n == 0) return bad("not a Slurm job id (1..4294967295)");
      r.slurm_job = *n;
    } else if (key == "step" || key == "node") {
      if (value.empty() || value.size() > 255) return bad("empty or over 255 bytes");
      (key == "step" ? r.step : r.node) = std::string(value);
    } else if (key == "epoch") {
      auto n = ParseNumber<uint64_t>(value);
      if (!n) return bad("not a number");
      r.epoch = *n;
      have_epoch = true;
    } else if (key == "path") {
      if (value.size() > 4096) return bad("over 4096 bytes");
      r.path = std::string(value);
      have_path = true;
    } else {
      return Fail(where, "unknown key '" + Printable(key) + "' (kind, job, step, node, epoch, path)");
    }
  }
  if (!have_kind) return Fail("report", "no kind= line");
  if (r.slurm_job == 0) return Fail("report", "no job= line");
  if ((have_epoch || have_path) && r.kind != StepReport::Kind::kCheckpoint)
    return Fail("report", "epoch= and path= belong to a checkpoint report, not to kind=" +
                              std::string(StepReportKindName(r.kind)));
  return r;
}

}  // namespace phalanx::service
