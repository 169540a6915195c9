#include "agent/output_pattern.h"

namespace phalanx::agent {

std::string ExpandOutputPattern(std::string_view pattern, const PatternFields& fields) {
  std::string out;
  out.reserve(pattern.size() + 16);
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c != '%' || i + 1 == pattern.size()) {
      out += c;
      continue;
    }
    const char k = pattern[++i];
    switch (k) {
      case 'j': out += std::to_string(fields.job_id); break;
      case 'x': out += fields.job_name; break;
      case 'u': out += fields.user; break;
      case 'N': out += fields.node; break;
      case 'n': out += std::to_string(fields.node_rank); break;
      case 'A': out += std::to_string(fields.array_job_id != kNoJob ? fields.array_job_id : fields.job_id); break;
      case 'a': out += fields.array_job_id != kNoJob ? std::to_string(fields.array_task_id) : "4294967294"; break;
      case '%': out += '%'; break;
      default: out += '%'; out += k;
    }
  }
  return out;
}

}  // namespace phalanx::agent
