// The client configuration file (/etc/phalanx/phalanx.conf), address lists and the order in
// which the user commands pick phalanxd (server_config.h).
#include "server_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace phalanx::cli {
namespace {

using Strings = std::vector<std::string>;

TEST(AddressList, OneAndSeveralInOrder) {
  EXPECT_EQ(*ParseAddressList("sched1:7080", "x"), Strings{"sched1:7080"});
  EXPECT_EQ(*ParseAddressList("sched1.example.org:7080, 10.0.0.2:7081,[fe80::1]:7082", "x"),
            (Strings{"sched1.example.org:7080", "10.0.0.2:7081", "[fe80::1]:7082"}));
}

TEST(AddressList, BadEntriesNameTheEntryAndWhere) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"sched1", "'sched1': expected HOST:PORT"},
      {":7080", "':7080': expected HOST:PORT"},
      {"sched1:0", "'sched1:0': the port must be a number in 1..65535"},
      {"sched1:65536", "the port must be a number in 1..65535"},
      {"sched1:http", "the port must be a number in 1..65535"},
      {"a:1,,b:2", "an empty address in the list"},
      {"a:1,", "an empty address in the list"},
      {"fe80::1:7080", "not a host name or address (an IPv6 address goes in [])"},
      {"[fe80::1]", "expected HOST:PORT"},
      {"[zz]:1", "not an IPv6 address"},
      {"a b:1", "not a host name or address"},
  };
  for (const Case& c : cases) {
    auto r = ParseAddressList(c.text, "phalanx.conf:2: server");
    ASSERT_FALSE(r.has_value()) << c.text;
    EXPECT_EQ(r.error().where, "phalanx.conf:2: server") << c.text;
    EXPECT_NE(r.error().message.find(c.message), std::string::npos) << c.text << ": " << r.error().message;
  }
}

TEST(ClientConfigFile, KeysCommentsAndBlankLines) {
  auto c = ParseClientConfig(
      "# Phalanx clients\n"
      "\n"
      "server = sched1:7080,sched2:7080\n"
      "  munge_socket=/run/munge/munge.socket.2  \r\n"
      "tls_ca = /etc/phalanx/ca.pem\n",
      "phalanx.conf");
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  EXPECT_EQ(c->servers, (Strings{"sched1:7080", "sched2:7080"}));
  EXPECT_EQ(c->server_where, "phalanx.conf:3");
  EXPECT_EQ(c->munge_socket, "/run/munge/munge.socket.2");
  EXPECT_EQ(c->tls_ca, "/etc/phalanx/ca.pem");
  auto empty = ParseClientConfig("", "phalanx.conf");
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->servers.empty());
}

TEST(ClientConfigFile, ErrorsNameFileAndLine) {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"# c\nsever = a:1\n", "phalanx.conf:2: unknown key 'sever' (known: server, munge_socket, tls_ca)"},
      {"server a:1\n", "phalanx.conf:1: expected 'key = value', got 'server a:1'"},
      {"server = a:1\n\nserver = b:2\n", "phalanx.conf:3: server: given twice"},
      {"server =\n", "phalanx.conf:1: server: needs a value"},
      {"= a:1\n", "phalanx.conf:1: a line without a key before '='"},
      {"\n\nserver = a:1,b\n", "phalanx.conf:3: server: 'b': expected HOST:PORT"},
      {"munge_socket = run/munge.sock\n", "phalanx.conf:1: munge_socket: 'run/munge.sock' is not an absolute path"},
  };
  for (const Case& c : cases) {
    auto r = ParseClientConfig(c.text, "phalanx.conf");
    ASSERT_FALSE(r.has_value()) << c.text;
    EXPECT_EQ(r.error().ToString(), c.error);
  }
}

class EndpointTest : public ::testing::Test {
 protected:
  EndpointTest() {
    std::string tmpl = "/tmp/phx-conf-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp";
    dir_ = tmpl;
    conf_ = dir_ + "/phalanx.conf";
  }
  ~EndpointTest() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& text) { std::ofstream(conf_) << text; }

  EndpointInputs In() const {
    EndpointInputs in;
    in.cwd = "/home/ada";
    in.default_conf = conf_;
    return in;
  }

  std::string dir_, conf_;
};

TEST_F(EndpointTest, OrderFlagsThenEnvironmentThenFileThenSocket) {
  Write("server = file1:7080, file2:7080\nmunge_socket = /m/file.sock\n");
  EndpointInputs in = In();
  // Nothing given: the file's list, with its munge socket.
  auto e = ResolveEndpoint(in);
  ASSERT_TRUE(e.has_value()) << e.error().ToString();
  EXPECT_EQ(e->servers, (Strings{"file1:7080", "file2:7080"}));
  EXPECT_EQ(e->origin, conf_ + ":1");
  EXPECT_EQ(e->munge_socket, "/m/file.sock");
  // $PHALANX_SOCKET over the file (no file needed), $PHALANX_SERVER over $PHALANX_SOCKET.
  in.env_socket = "run/p.sock";
  e = ResolveEndpoint(in);
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(e->servers.empty());
  EXPECT_EQ(e->socket_path, "/home/ada/run/p.sock");
  in.env_server = "env:1";
  in.env_munge = "/m/env.sock";
  e = ResolveEndpoint(in);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->servers, Strings{"env:1"});
  EXPECT_EQ(e->origin, "$PHALANX_SERVER");
  EXPECT_EQ(e->munge_socket, "/m/env.sock");
  // --server over everything; --socket too.
  in.server_flag = "flag:2,flag:3";
  e = ResolveEndpoint(in);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->servers, (Strings{"flag:2", "flag:3"}));
  EXPECT_EQ(e->origin, "--server");
  in.server_flag = "";
  in.socket_flag = "/s.sock";
  e = ResolveEndpoint(in);
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(e->servers.empty());
  EXPECT_EQ(e->socket_path, "/s.sock");
  in.server_flag = "a:1";
  auto both = ResolveEndpoint(in);
  ASSERT_FALSE(both.has_value());
  EXPECT_EQ(both.error().message, "--server and --socket: give one of them");
}

TEST_F(EndpointTest, NoFileOrNoServerLineMeansTheLocalSocket) {
  auto e = ResolveEndpoint(In());  // the default path does not exist: fine
  ASSERT_TRUE(e.has_value()) << e.error().ToString();
  EXPECT_TRUE(e->servers.empty());
  EXPECT_EQ(e->socket_path, "/run/phalanx/phalanxd.sock");
  Write("munge_socket = /m.sock\n");
  e = ResolveEndpoint(In());
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(e->servers.empty());
}

TEST_F(EndpointTest, ErrorsOfTheFileAndTheEnvironment) {
  Write("server = a:1\nport = 7\n");
  EndpointInputs in = In();
  auto e = ResolveEndpoint(in);
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.error().ToString(), conf_ + ":2: unknown key 'port' (known: server, munge_socket, tls_ca)");
  // A broken file does not stop a command given the local socket.
  in.socket_flag = "/s.sock";
  EXPECT_TRUE(ResolveEndpoint(in).has_value());
  in.socket_flag = "";
  // $PHALANX_CONF must exist.
  in.env_conf = "/nonexistent/phalanx.conf";
  e = ResolveEndpoint(in);
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.error().ToString(), "/nonexistent/phalanx.conf: no such file ($PHALANX_CONF names it)");
  in.env_conf = nullptr;
  Write("server = a:1\n");
  in.env_server = "a:1,:2";
  e = ResolveEndpoint(in);
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.error().ToString(), "$PHALANX_SERVER: ':2': expected HOST:PORT");
}

}  // namespace
}  // namespace phalanx::cli
