// A stand-in for the Slurm process that loads the plugin: the spank_* and slurm_* functions
// args.c calls, recording what it did. Thread-safety: none (tests are single-threaded).
#pragma once

#include <map>
#include <string>
#include <vector>

extern "C" {
#include <slurm/spank.h>
}

namespace fake_spank {

struct State {
  spank_context_t context = S_CTX_ALLOCATOR;
  std::vector<spank_option*> options;              // spank_option_register
  std::vector<std::string> errors;                 // slurm_error
  std::map<std::string, std::string> job_control;  // spank_job_control_setenv
  std::map<std::string, std::string> job_env;      // spank_getenv (remote context)
};

State& Get();
void Reset();
// The callback of --NAME, as registered.
spank_option* Option(const std::string& name);

}  // namespace fake_spank
