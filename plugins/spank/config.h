/* plugstack.conf arguments -> struct phx_config (parse.h), with the error logged once.
 * Thread-safety: reentrant. */
#ifndef PHALANX_SPANK_CONFIG_H
#define PHALANX_SPANK_CONFIG_H

#include "parse.h"

/* 0, or -1 after logging "phalanx: plugstack.conf: unknown key 'x' (...)" or the bad value. */
int phx_config_load(struct phx_config* config, int ac, char** av);

#endif /* PHALANX_SPANK_CONFIG_H */
