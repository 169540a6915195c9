#include "fake_spank.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace fake_spank {

State& Get() {
  static State state;
  return state;
}

void Reset() { Get() = State{}; }

spank_option* Option(const std::string& name) {
  for (spank_option* o : Get().options) {
    if (name == o->name) return o;
  }
  return nullptr;
}

}  // namespace fake_spank

extern "C" {

spank_context_t spank_context(void) { return fake_spank::Get().context; }

spank_err_t spank_option_register(spank_t, struct spank_option* opt) {
  fake_spank::Get().options.push_back(opt);
  return static_cast<spank_err_t>(ESPANK_SUCCESS);
}

spank_err_t spank_getenv(spank_t, const char* var, char* buf, int len) {
  const auto& env = fake_spank::Get().job_env;
  auto it = env.find(var);
  if (it == env.end()) return static_cast<spank_err_t>(ESPANK_ENV_NOEXIST);
  std::snprintf(buf, static_cast<size_t>(len), "%s", it->second.c_str());
  return static_cast<spank_err_t>(ESPANK_SUCCESS);
}

spank_err_t spank_job_control_setenv(spank_t, const char* name, const char* value, int) {
  fake_spank::Get().job_control[name] = value;
  return static_cast<spank_err_t>(ESPANK_SUCCESS);
}

const char* spank_strerror(spank_err_t) { return "fake error"; }

void slurm_error(const char* format, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, format);
  std::vsnprintf(buf, sizeof buf, format, ap);
  va_end(ap);
  fake_spank::Get().errors.push_back(buf);
}

}  // extern "C"
