#include "job_spec_check.h"

#include <cstdio>
#include <string>

#include "util/constraint.h"
#include "util/dependency.h"
#include "util/hostlist.h"
#include "util/job_array.h"
#include "util/job_fields.h"
#include "util/strings.h"

namespace phalanx {
namespace {

std::string Str(uint64_t n) { return std::to_string(n); }

Result<ElasticStepRule> StepRule(const v1::JobSpec& p) {
  switch (p.elastic_step_kind()) {
    case v1::ELASTIC_STEP_ANY: return ElasticStepRule::kAny;
    case v1::ELASTIC_STEP_MULTIPLE: return ElasticStepRule::kMultiple;
    case v1::ELASTIC_STEP_POWER_OF_TWO: return ElasticStepRule::kPowerOfTwo;
    default: return Fail("spec.elastic_step_kind", "unknown step kind " + std::to_string(p.elastic_step_kind()));
  }
}

Status CheckRun(const v1::JobSpec& p) {
  if (static_cast<size_t>(p.command_size()) > kMaxArguments) {
    return Fail("spec.command", Str(p.command_size()) + " arguments; at most " + Str(kMaxArguments) + " are allowed");
  }
  if (p.command_size() == 0 && p.script().empty()) return Fail("spec.command", "empty: give a command or a script");
  if (p.script().empty() && p.command(0).empty()) return Fail("spec.command", "the program name is empty");
  for (int i = 0; i < p.command_size(); ++i) {
    PHX_RETURN_IF_ERROR(CheckArgument("spec.command[" + std::to_string(i) + "]", p.command(i)));
  }
  if (!p.script().empty()) PHX_RETURN_IF_ERROR(CheckScript("spec.script", p.script()));
  if (!p.working_dir().empty()) {
    PHX_RETURN_IF_ERROR(CheckPath("spec.working_dir", p.working_dir()));
    if (p.working_dir()[0] != '/')
      return Fail("spec.working_dir", QuoteValue(p.working_dir()) + " is not an absolute path");
  }
  if (p.has_umask() && p.umask() > 0777) {
    char octal[16];
    std::snprintf(octal, sizeof octal, "0%o", p.umask());
    return Fail("spec.umask", "must be at most 0777 (got " + std::string(octal) + ")");
  }
  PHX_RETURN_IF_ERROR(CheckPath("spec.stdout_pattern", p.stdout_pattern()));
  PHX_RETURN_IF_ERROR(CheckPath("spec.stderr_pattern", p.stderr_pattern()));
  if (static_cast<size_t>(p.env_size()) > kMaxEnvVars)
    return Fail("spec.env", Str(p.env_size()) + " variables; at most " + Str(kMaxEnvVars) + " are allowed");
  for (const auto& [name, value] : p.env()) {
    PHX_RETURN_IF_ERROR(CheckEnvName("spec.env", name));
    PHX_RETURN_IF_ERROR(CheckEnvValue("spec.env[" + name + "]", value));
  }
  return {};
}

constexpr uint64_t kMaxCpusPerTask = 1u << 16;
constexpr uint64_t kMaxMemoryMb = uint64_t{1} << 40;  // a petabyte: a bound against overflow, not a policy
constexpr int64_t kMaxBeginTime = int64_t{1} << 40;

// Slurm's --mail-type values.
bool IsMailType(std::string_view t) {
  static constexpr std::string_view kTypes[] = {
      "NONE",      "BEGIN",      "END",           "FAIL",          "REQUEUE",       "ALL",        "INVALID_DEPEND",
      "STAGE_OUT", "TIME_LIMIT", "TIME_LIMIT_90", "TIME_LIMIT_80", "TIME_LIMIT_50", "ARRAY_TASKS"};
  for (std::string_view k : kTypes) {
    if (k == t) return true;
  }
  return false;
}

Status CheckHostlistField(std::string_view field, const std::string& value) {
  if (value.empty()) return {};
  auto hosts = ExpandHostlist(value, field);
  if (!hosts) return std::unexpected(hosts.error());
  return {};
}

// The Slurm-like fields (sbatch -c, --mem, -n, --begin, -w, -x, -C, --comment, --mail-*).
Status CheckSlurmFields(const v1::JobSpec& p) {
  if (p.cpus_per_task() > kMaxCpusPerTask)
    return Fail("spec.cpus_per_task", Str(p.cpus_per_task()) + " is above " + Str(kMaxCpusPerTask));
  if (p.mem_per_node_mb() > kMaxMemoryMb)
    return Fail("spec.mem_per_node_mb", Str(p.mem_per_node_mb()) + " is above " + Str(kMaxMemoryMb));
  if (p.mem_per_gpu_mb() > kMaxMemoryMb)
    return Fail("spec.mem_per_gpu_mb", Str(p.mem_per_gpu_mb()) + " is above " + Str(kMaxMemoryMb));
  if (p.mem_per_node_mb() > 0 && p.mem_per_gpu_mb() > 0)
    return Fail("spec.mem_per_gpu_mb", "give mem_per_node_mb or mem_per_gpu_mb, not both (as sbatch)");
  if (p.ntasks() > kMaxJobGpus) return Fail("spec.ntasks", Str(p.ntasks()) + " is above " + Str(kMaxJobGpus));
  if (p.ntasks_per_node() > kMaxJobGpus)
    return Fail("spec.ntasks_per_node", Str(p.ntasks_per_node()) + " is above " + Str(kMaxJobGpus));
  if (p.begin_time() < 0 || p.begin_time() > kMaxBeginTime)
    return Fail("spec.begin_time", std::to_string(p.begin_time()) + " is not a time in unix seconds");
  PHX_RETURN_IF_ERROR(CheckLabel("spec.nodelist", p.nodelist(), kMaxPathBytes));
  PHX_RETURN_IF_ERROR(CheckHostlistField("spec.nodelist", p.nodelist()));
  PHX_RETURN_IF_ERROR(CheckLabel("spec.exclude", p.exclude(), kMaxPathBytes));
  PHX_RETURN_IF_ERROR(CheckHostlistField("spec.exclude", p.exclude()));
  auto constraint = ParseConstraint(p.constraint(), "spec.constraint");
  if (!constraint) return std::unexpected(constraint.error());
  PHX_RETURN_IF_ERROR(CheckLabel("spec.comment", p.comment(), kMaxPathBytes));
  const v1::JobSubmitInfo& info = p.submit_info();
  PHX_RETURN_IF_ERROR(CheckLabel("spec.submit_info.submit_host", info.submit_host()));
  PHX_RETURN_IF_ERROR(CheckPath("spec.submit_info.submit_dir", info.submit_dir()));
  PHX_RETURN_IF_ERROR(CheckLabel("spec.submit_info.mail_user", info.mail_user()));
  PHX_RETURN_IF_ERROR(CheckLabel("spec.submit_info.mail_type", info.mail_type()));
  if (!info.mail_type().empty()) {
    for (std::string_view t : Split(info.mail_type(), ',')) {
      if (!IsMailType(t)) {
        return Fail("spec.submit_info.mail_type",
                    QuoteValue(t) + " is not a mail type (NONE, BEGIN, END, FAIL, REQUEUE, ALL, TIME_LIMIT, ...)");
      }
    }
  }
  return {};
}

}  // namespace

Status CheckJobSpec(const v1::JobSpec& p) {
  PHX_RETURN_IF_ERROR(CheckLabel("spec.name", p.name()));
  PHX_RETURN_IF_ERROR(CheckLabel("spec.account", p.account()));
  if (!p.priority_class().empty()) PHX_RETURN_IF_ERROR(CheckClassName("spec.priority_class", p.priority_class()));
  PHX_RETURN_IF_ERROR(CheckGpuShape("spec.", p.gpus(), p.nodes(), p.gpus_per_node()));
  auto rule = StepRule(p);
  PHX_RETURN_IF_ERROR(rule);
  PHX_RETURN_IF_ERROR(CheckElastic("spec.", p.gpus(), p.min_gpus(), p.nodes(), *rule, p.elastic_step()));
  if (!v1::TopologyLevel_IsValid(p.topology()))
    return Fail("spec.topology", "unknown topology level " + std::to_string(p.topology()));
  PHX_RETURN_IF_ERROR(CheckSeconds("spec.walltime_s", p.walltime_s()));
  PHX_RETURN_IF_ERROR(CheckSeconds("spec.checkpoint_warning_s", p.checkpoint_warning_s()));
  PHX_RETURN_IF_ERROR(CheckSeconds("spec.checkpoint_interval_s", p.checkpoint_interval_s()));
  PHX_RETURN_IF_ERROR(CheckSignalNumber("spec.checkpoint_signal", p.checkpoint_signal()));
  if (static_cast<size_t>(p.after_ok_size()) > kMaxArguments)
    return Fail("spec.after_ok", Str(p.after_ok_size()) + " dependencies; at most " + Str(kMaxArguments));
  for (uint64_t id : p.after_ok()) {
    if (id == 0) return Fail("spec.after_ok", "job id 0 does not exist");
  }
  if (!p.dependency().empty()) {
    if (p.after_ok_size() > 0) return Fail("spec.dependency", "give after_ok or dependency, not both");
    if (auto d = ParseDependencies(p.dependency()); !d) return Fail("spec.dependency", d.error().message);
  }
  if (!p.array().empty()) {
    if (auto a = ParseArraySpec(p.array(), kArraySizeCeiling); !a) return Fail("spec.array", a.error().message);
  }
  PHX_RETURN_IF_ERROR(CheckSlurmFields(p));
  return CheckRun(p);
}

}  // namespace phalanx
