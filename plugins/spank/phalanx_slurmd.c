#include "phalanx_slurmd.h"

#include "config.h"

struct plugin_context {
  struct phx_config config;
};

static struct plugin_context context;

int phx_slurmd_init(spank_t sp, int ac, char** av) {
  (void)sp;
  return phx_config_load(&context.config, ac, av);
}
