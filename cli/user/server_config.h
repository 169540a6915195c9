// Where the user commands find phalanxd (docs/user-guide.md, "Which phalanxd"): the local Unix
// socket, or phalanxd's TCP listener for users on another machine (docs/deployment.md), from,
// in order:
//   1. --server HOST:PORT[,HOST:PORT...], or --socket PATH (not both),
//   2. $PHALANX_SERVER, then $PHALANX_SOCKET,
//   3. `server = ...` in the client configuration file: $PHALANX_CONF (which must exist), else
//      /etc/phalanx/phalanx.conf (when it exists),
//   4. the local socket, /run/phalanx/phalanxd.sock.
// A server is an ADDRESS LIST: the addresses are tried in order and the first that answers is
// used (a second phalanxd host, docs/deployment.md).
//
// The configuration file is small "key = value" lines; blank lines and lines starting with '#'
// are ignored; every key at most once; unknown keys are errors. Keys:
//   server = host:port[,host:port...]   the daemon (a hostname, an IPv4 address or [IPv6])
//   munge_socket = PATH                 munged's socket (default: libmunge's, /run/munge/munge.socket.2)
//   tls_ca = PATH                       the CA of phalanxd's TLS certificate: connect with TLS
// Errors name the file and line: "/etc/phalanx/phalanx.conf:3: unknown key 'sever'".
// Thread-safety: pure functions, except LoadClientConfig and ResolveEndpoint (read the file).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"

namespace phalanx::cli {

inline constexpr std::string_view kDefaultClientConfig = "/etc/phalanx/phalanx.conf";

struct ClientConfig {
  std::vector<std::string> servers;  // empty: no `server` line
  std::string server_where;          // "file:line" of the `server` line
  std::string munge_socket;
  std::string tls_ca;
};

// "host:port[,host:port...]": each host a name, an IPv4 address or an IPv6 address in [];
// each port 1..65535; no empty entries. Fails naming `where` and the bad entry.
Result<std::vector<std::string>> ParseAddressList(std::string_view text, std::string_view where);

// Parses a configuration file's text; `name` is used in error positions.
Result<ClientConfig> ParseClientConfig(std::string_view text, std::string_view name);

// Reads `path`: nullopt when it does not exist and `must_exist` is false.
Result<std::optional<ClientConfig>> LoadClientConfig(const std::string& path, bool must_exist);

struct Endpoint {
  std::vector<std::string> servers;  // TCP addresses in order; empty: the Unix socket
  std::string socket_path;           // when `servers` is empty
  std::string munge_socket;          // empty: libmunge's default
  std::string tls_ca;                // a CA file: TLS
  std::string tls_ca_pem;            // its contents (Connect reads it; the Connection uses it)
  std::string origin;                // where the choice came from: "--server", "$PHALANX_SERVER", "file:3", ...
};

struct EndpointInputs {
  std::string_view server_flag, socket_flag;  // empty: not given
  const char* env_server = nullptr;           // $PHALANX_SERVER
  const char* env_socket = nullptr;           // $PHALANX_SOCKET
  const char* env_conf = nullptr;             // $PHALANX_CONF
  const char* env_munge = nullptr;            // $PHALANX_MUNGE_SOCKET (over the file's munge_socket)
  std::string_view cwd = "/";                 // relative socket paths are made absolute against it
  std::string_view default_conf = kDefaultClientConfig;
};

// The endpoint (see the order above). Fails on --server with --socket, a bad address list or
// a bad configuration file; the file is read only when a TCP server may be chosen from it or
// needs its munge_socket / tls_ca (not for --socket / $PHALANX_SOCKET).
Result<Endpoint> ResolveEndpoint(const EndpointInputs& in);

// The environment's values: ResolveEndpoint over getenv() and the current directory.
Result<Endpoint> ResolveEndpointFromEnv(std::string_view server_flag, std::string_view socket_flag);

}  // namespace phalanx::cli
