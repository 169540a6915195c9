#include "config.h"

#include <slurm/spank.h>

int phx_config_load(struct phx_config* config, int ac, char** av) {
  char err[512];
  if (phx_config_parse(config, ac, (const char* const*)av, err, sizeof(err)) < 0) {
    slurm_error("phalanx: %s", err);
    return -1;
  }
  return 0;
}
