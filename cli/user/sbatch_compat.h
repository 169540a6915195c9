// sbatch compatibility of gsub: the sbatch options it does not have (refused where ignoring
// them would run the job wrongly, else ignored with a warning), and one #SBATCH line read with
// them. docs/user-guide.md ("Coming from Slurm") has the same table.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "options.h"

namespace phalanx::cli {

struct Unsupported {
  std::string_view name;
  char short_name;
  bool takes_value;
  bool refuse;
  std::string_view why;
};

// The entry for an sbatch option gsub does not have (by long or short name), or nullptr.
const Unsupported* FindUnsupported(std::string_view name, char short_name);

// One #SBATCH line's words: the options of `specs` go to gsub's parser (so their errors read as
// for #PHX); the others are refused or ignored with a warning naming the line and the option.
Result<ParsedOptions> ParseSbatchWords(const std::vector<std::string>& words, const std::string& where,
                                       std::span<const OptionSpec> specs, std::vector<std::string>& warnings);

}  // namespace phalanx::cli
