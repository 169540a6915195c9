#include "job_spec_check.h"

#include <cstdio>
#include <string>

#include "util/dependency.h"
#include "util/job_array.h"
#include "util/job_fields.h"

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
  return CheckRun(p);
}

}  // namespace phalanx
