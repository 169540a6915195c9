#include "phalanx_alloc.h"

#include <string.h>

#include "args.h"
#include "config.h"

struct plugin_context {
  struct phx_config config;
};

static struct plugin_context context;

int phx_alloc_init(spank_t sp, int ac, char** av) {
  if (phx_config_load(&context.config, ac, av) < 0) return -1;
  return phx_args_register(sp);
}

int phx_alloc_post_opt(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  if (phx_args_check_environment(sp) < 0) return -1;
  return phx_args_forward(sp, &context.config);
}

int phx_alloc_exit(spank_t sp, int ac, char** av) {
  (void)sp;
  (void)ac;
  (void)av;
  phx_args_reset();
  memset(&context, 0, sizeof(context));
  return 0;
}
