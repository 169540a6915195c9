/* The pure part of the Phalanx SPANK plugin: the --phx-* option values and the plugstack.conf
 * arguments, parsed into plain structs. No Slurm, no I/O, no globals: the plugin's callbacks
 * (args.c, config.c) log the message these functions write and return -1.
 *
 * The grammar is gsub's (docs/user-guide.md): signals and durations go through the very parsers
 * gsub uses (cli/user/signal_names.cc, cli/user/duration.cc), levels and class names follow
 * cli/user/submit_options.cc.
 *
 * Every function returns 0 on success and -1 on failure; on failure `err` (errlen bytes, always
 * NUL-terminated when errlen > 0) holds one line naming the option or key and the value, and the
 * output struct is left unchanged. Never throws (C linkage; an allocation failure is an error).
 * Thread-safety: pure functions, safe from any thread. */
#ifndef PHALANX_SPANK_PARSE_H
#define PHALANX_SPANK_PARSE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum phx_level {
  PHX_LEVEL_UNSET = 0, /* not given */
  PHX_LEVEL_ANY,
  PHX_LEVEL_NODE,
  PHX_LEVEL_NVLINK,
  PHX_LEVEL_LEAF,
  PHX_LEVEL_SPINE,
};

struct phx_topology {
  enum phx_level level;
  int prefer; /* 1: ":prefer" (a preference), 0: a requirement */
};

struct phx_elastic {
  unsigned min_gpus; /* 1 <= min_gpus <= max_gpus */
  unsigned max_gpus;
};

struct phx_checkpoint {
  int signal;          /* 1..64 */
  long long warning_s; /* seconds ahead of the stop; 0: none given */
};

#define PHX_CLASS_MAX 64

/* "node|nvlink|nvl|leaf|spine|any[:prefer|:require]" */
int phx_parse_topology(const char* text, struct phx_topology* out, char* err, size_t errlen);
/* "MIN:MAX" GPUs, 1 <= MIN <= MAX <= 2^20 */
int phx_parse_elastic(const char* text, struct phx_elastic* out, char* err, size_t errlen);
/* "SIG[@SECS]": SIG as gsub (USR1, SIGUSR1, usr1, 10); SECS a number of seconds (1..86400) or a
 * duration with a unit (90s, 5m, 1h) */
int phx_parse_checkpoint(const char* text, struct phx_checkpoint* out, char* err, size_t errlen);
/* a class name: letters, digits, '_' and '-', at most PHX_CLASS_MAX - 1 characters */
int phx_parse_class(const char* text, char out[PHX_CLASS_MAX], char* err, size_t errlen);
/* 1/true/yes/y -> 1, 0/false/no/n -> 0 */
int phx_parse_bool(const char* text, int* out, char* err, size_t errlen);

/* The index-th name (from 0) of a Slurm hostlist ("n[1-3,7]", "a1,b2"): 0, or -1 when the list
 * does not parse, is shorter, or the name does not fit in outlen. */
int phx_hostlist_nth(const char* list, unsigned index, char* out, size_t outlen);

/* "leaf" for PHX_LEVEL_LEAF ...; "" for PHX_LEVEL_UNSET. */
const char* phx_level_name(enum phx_level level);

/* The plugstack.conf arguments: `required /path/phalanx_spank.so key=value ...`. */
#define PHX_SOCKET_MAX 108 /* sizeof(sockaddr_un.sun_path) */
#define PHX_PATH_MAX 1024

struct phx_config {
  char socket[PHX_SOCKET_MAX];          /* socket=       phalanxd's report socket: a path (slurm.report_socket)
                                           or HOST:PORT (slurm.report_listen) */
  int timeout_ms;                       /* timeout_ms=   one report to phalanxd, 1..10000 */
  struct phx_topology default_topology; /* default_topology= for jobs without --phx-topology */
  int fallback_delay_s;                 /* fallback_delay_s= managed jobs wait this long for phalanxd, 0..3600 */
  char checkpoint_dir[PHX_PATH_MAX];    /* checkpoint_dir= where PHALANX_CHECKPOINT_FILE lies */
  int report;                           /* report=       1: report managed steps to phalanxd */
  char munge_socket[PHX_SOCKET_MAX];    /* munge_socket= munged's socket; "": libmunge's default */
  char gpu_topology[PHX_PATH_MAX];      /* gpu_topology= `nvidia-smi topo -m` of the node (ring.h); "": none */
};

#define PHX_DEFAULT_SOCKET "/run/phalanx/phalanxd-report.sock"
#define PHX_DEFAULT_TIMEOUT_MS 200
#define PHX_DEFAULT_FALLBACK_DELAY_S 30
#define PHX_DEFAULT_CHECKPOINT_DIR "/tmp"

/* Sets every default, then applies av[0..ac) in order (a later key overrides an earlier one).
 * Fails on an argument without '=', an unknown key, or a bad value; the message names it. */
int phx_config_parse(struct phx_config* out, int ac, const char* const* av, char* err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* PHALANX_SPANK_PARSE_H */
