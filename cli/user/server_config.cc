#include "server_config.h"

#include <sys/stat.h>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <set>

#include "client.h"
#include "util/file_read.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace phalanx::cli {
namespace {

bool HostChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_'; }

Result<std::string> ParseAddress(std::string_view entry, std::string_view where) {
  const auto bad = [&](std::string why) -> Result<std::string> {
    return std::unexpected(Error{std::string(where), "'" + std::string(entry) + "': " + std::move(why)});
  };
  size_t colon;
  if (entry.starts_with('[')) {
    const size_t close = entry.find(']');
    if (close == std::string_view::npos || close == 1) return bad("an IPv6 address goes in [] before ':PORT'");
    for (char c : entry.substr(1, close - 1)) {
      if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') return bad("not an IPv6 address");
    }
    if (close + 1 >= entry.size() || entry[close + 1] != ':') return bad("expected HOST:PORT");
    colon = close + 1;
  } else {
    colon = entry.rfind(':');
    if (colon == std::string_view::npos || colon == 0) return bad("expected HOST:PORT");
    for (char c : entry.substr(0, colon)) {
      if (!HostChar(c)) return bad("not a host name or address (an IPv6 address goes in [])");
    }
  }
  const std::string_view port = entry.substr(colon + 1);
  const auto n = ParseNumber<uint32_t>(port);
  if (!n || *n < 1 || *n > 65535) return bad("the port must be a number in 1..65535");
  return std::string(entry);
}

}  // namespace

Result<std::vector<std::string>> ParseAddressList(std::string_view text, std::string_view where) {
  std::vector<std::string> out;
  for (std::string_view part : Split(text, ',')) {
    const std::string_view entry = Trim(part);
    if (entry.empty())
      return std::unexpected(Error{std::string(where), "'" + std::string(text) + "': an empty address in the list"});
    PHX_ASSIGN_OR_RETURN(auto address, ParseAddress(entry, where));
    out.push_back(std::move(address));
  }
  return out;
}

Result<ClientConfig> ParseClientConfig(std::string_view text, std::string_view name) {
  ClientConfig c;
  std::set<std::string, std::less<>> seen;
  size_t line_no = 0;
  for (std::string_view line : Split(text, '\n')) {
    ++line_no;
    const std::string where = std::string(name) + ":" + std::to_string(line_no);
    if (line.ends_with('\r')) line.remove_suffix(1);
    const std::string_view trimmed = Trim(line);
    if (trimmed.empty() || trimmed.starts_with('#')) continue;
    const size_t eq = trimmed.find('=');
    if (eq == std::string_view::npos)
      return std::unexpected(Error{where, "expected 'key = value', got '" + std::string(trimmed) + "'"});
    const std::string_view key = Trim(trimmed.substr(0, eq));
    const std::string_view value = Trim(trimmed.substr(eq + 1));
    if (key.empty()) return std::unexpected(Error{where, "a line without a key before '='"});
    if (key != "server" && key != "munge_socket" && key != "tls_ca")
      return std::unexpected(
          Error{where, "unknown key '" + std::string(key) + "' (known: server, munge_socket, tls_ca)"});
    if (!seen.emplace(key).second) return std::unexpected(Error{where, std::string(key) + ": given twice"});
    if (value.empty()) return std::unexpected(Error{where, std::string(key) + ": needs a value"});
    if (key == "server") {
      PHX_ASSIGN_OR_RETURN(c.servers, ParseAddressList(value, where + ": server"));
      c.server_where = where;
    } else if (key == "munge_socket" || key == "tls_ca") {
      if (!value.starts_with('/'))
        return std::unexpected(
            Error{where, std::string(key) + ": '" + std::string(value) + "' is not an absolute path"});
      (key == "tls_ca" ? c.tls_ca : c.munge_socket) = std::string(value);
    }
  }
  return c;
}

Result<std::optional<ClientConfig>> LoadClientConfig(const std::string& path, bool must_exist) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 && errno == ENOENT) {
    if (must_exist) return std::unexpected(Error{path, "no such file ($PHALANX_CONF names it)"});
    return std::optional<ClientConfig>();
  }
  PHX_ASSIGN_OR_RETURN(auto text, ReadFileBounded(path, 1 << 20));
  PHX_ASSIGN_OR_RETURN(auto config, ParseClientConfig(text, path));
  return std::optional<ClientConfig>(std::move(config));
}

Result<Endpoint> ResolveEndpoint(const EndpointInputs& in) {
  if (!in.server_flag.empty() && !in.socket_flag.empty())
    return std::unexpected(Error{"", "--server and --socket: give one of them"});
  Endpoint e;
  const auto local = [&](std::string_view path, std::string origin) {
    e.servers.clear();
    e.socket_path = ResolveSocket(path, nullptr, in.cwd);
    e.origin = std::move(origin);
  };
  if (!in.socket_flag.empty()) {
    local(in.socket_flag, "--socket");
    return e;
  }
  const bool env_server = in.env_server != nullptr && *in.env_server != '\0';
  const bool env_socket = in.env_socket != nullptr && *in.env_socket != '\0';
  if (in.server_flag.empty() && !env_server && env_socket) {
    local(in.env_socket, "$PHALANX_SOCKET");
    return e;
  }
  // The file: for its server, or the munge socket and CA of a server given otherwise.
  const bool conf_given = in.env_conf != nullptr && *in.env_conf != '\0';
  const std::string conf_path = conf_given ? std::string(in.env_conf) : std::string(in.default_conf);
  PHX_ASSIGN_OR_RETURN(auto conf, LoadClientConfig(conf_path, conf_given));
  if (conf) {
    e.munge_socket = conf->munge_socket;
    e.tls_ca = conf->tls_ca;
  }
  if (in.env_munge != nullptr && *in.env_munge != '\0') e.munge_socket = in.env_munge;
  if (!in.server_flag.empty()) {
    PHX_ASSIGN_OR_RETURN(e.servers, ParseAddressList(in.server_flag, "--server"));
    e.origin = "--server";
  } else if (env_server) {
    PHX_ASSIGN_OR_RETURN(e.servers, ParseAddressList(in.env_server, "$PHALANX_SERVER"));
    e.origin = "$PHALANX_SERVER";
  } else if (conf && !conf->servers.empty()) {
    e.servers = conf->servers;
    e.origin = conf->server_where;
  } else {
    local(kDefaultSocket, "the default socket");
  }
  return e;
}

Result<Endpoint> ResolveEndpointFromEnv(std::string_view server_flag, std::string_view socket_flag) {
  const std::string cwd = CurrentDir();
  EndpointInputs in;
  in.server_flag = server_flag;
  in.socket_flag = socket_flag;
  in.env_server = std::getenv("PHALANX_SERVER");
  in.env_socket = std::getenv("PHALANX_SOCKET");
  in.env_conf = std::getenv("PHALANX_CONF");
  in.env_munge = std::getenv("PHALANX_MUNGE_SOCKET");
  in.cwd = cwd;
  return ResolveEndpoint(in);
}

}  // namespace phalanx::cli
