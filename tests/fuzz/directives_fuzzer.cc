// gsub's job script: the script checks, its #PHX directives (ParseDirectives) and every option
// value they carry (BuildJobSpec: GPUs, nodes, time, signals, dependencies, exports, ...).
// PlanSubmit runs as `gsub job.sh` with the input as job.sh; the first line of the input that
// starts with "ARGS " gives extra command-line options before the script (space separated).
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "submit_options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace phalanx;
  std::string_view text = fuzz::Text(data, size);
  std::vector<std::string> args;
  if (text.starts_with("ARGS ")) {
    const size_t end = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(5, end - 5);
    text.remove_prefix(std::min(end + 1, text.size()));
    while (!line.empty()) {
      const size_t space = std::min(line.find(' '), line.size());
      if (space > 0) args.emplace_back(line.substr(0, space));
      line.remove_prefix(std::min(space + 1, line.size()));
    }
  }
  args.emplace_back("job.sh");
  auto command_line = cli::ParseSubmitArgs(args);
  if (!command_line) return fuzz::CheckError(command_line.error()), 0;
  const std::string script(text);
  cli::SubmitContext ctx{"/home/alice",
                         {{"HOME", "/home/alice"}, {"PATH", "/usr/bin"}, {"SECRET", "x"}},
                         [&](const std::string& path) -> Result<std::string> {
                           if (path != "job.sh") return Fail(path, "cannot open the script");
                           return script;
                         }};
  auto plan = cli::PlanSubmit(*command_line, ctx);
  if (!plan) return fuzz::CheckError(plan.error()), 0;
  FUZZ_CHECK(plan->spec.script().size() <= cli::kMaxScriptBytes);
  return 0;
}
