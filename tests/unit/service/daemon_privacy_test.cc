// Privacy and access rules (issue 12, items 2 and 4), on phalanxd over its real Unix socket
// and its real HTTP port, with real other users: the test (root, an admin) forks clients that
// setuid() to alice (nobody, 65534), bob (uid 3002) and an admin by group (uid 3003, whose
// gid 3003 is in admin_groups), and execs privacy_client.cc in them.
#include <grp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "daemon_harness.h"

namespace phalanx::service::testing {
namespace {

struct User {
  uid_t uid;
  gid_t gid;
};
constexpr User kAlice{65534, 65534};  // "nobody"
constexpr User kBob{3002, 3002};      // "uid:3002", no password entry
constexpr User kGroupAdmin{3003, 3003};

// privacy_client's one line, run as `u`; "exit status N: ..." when it failed.
std::string As(const User& u, Harness& h, std::vector<std::string> args) {
  int out[2];
  if (pipe(out) != 0) return "pipe failed";
  args.insert(args.begin(), h.config.socket_path);
  const pid_t pid = fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    if (setgroups(0, nullptr) != 0 || setgid(u.gid) != 0 || setuid(u.uid) != 0) _exit(3);
    std::vector<char*> argv = {const_cast<char*>(PRIVACY_CLIENT)};
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(PRIVACY_CLIENT, argv.data());
    _exit(4);
  }
  close(out[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "exit status " + std::to_string(status) + ": " + text;
  return text;
}

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string Code(grpc::StatusCode c) { return "code=" + std::to_string(static_cast<int>(c)) + " "; }

uint64_t IdOf(const std::string& submit) {
  const size_t at = submit.find("id=");
  return at == std::string::npos ? 0 : std::stoull(submit.substr(at + 3));
}

constexpr const char* kSecrets[] = {"hunter2", "WANDB_API_KEY", "wk-123", "/srv/private/alice"};

class Privacy : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to become other users";
    h_.config.admin_groups = {"gid:3003"};
  }
  Harness h_;
};

// Default private_data: everyone sees alice's job, only alice and admins its script,
// arguments, environment, working directory and output paths.
TEST_F(Privacy, OnlyTheOwnerAndAdminsSeeScriptArgsEnvAndCwd) {
  h_.Start();
  const std::string sub = As(kAlice, h_, {"submit", "-", "-"});
  ASSERT_TRUE(Has(sub, "code=0 ")) << sub;
  const std::string id = std::to_string(IdOf(sub));

  const std::string bob = As(kBob, h_, {"get", id});
  EXPECT_TRUE(Has(bob, "code=0 user=nobody uid=65534 name=secret-run ")) << bob;
  for (const char* s : kSecrets) EXPECT_FALSE(Has(bob, s)) << s << " in " << bob;
  EXPECT_TRUE(Has(bob,
                  "hidden=spec.script,spec.command,spec.env,spec.working_dir,spec.stdout_pattern,"
                  "spec.stderr_pattern "))
      << bob;
  EXPECT_TRUE(Has(As(kBob, h_, {"get", id, "env"}), Code(grpc::StatusCode::PERMISSION_DENIED)));
  const std::string list = As(kBob, h_, {"list"});
  EXPECT_TRUE(Has(list, "code=0 jobs=" + id + ":nobody::secret-run,")) << list;
  for (const char* s : kSecrets) EXPECT_FALSE(Has(list, s)) << s << " in " << list;

  const std::string alice = As(kAlice, h_, {"get", id, "env"});
  EXPECT_TRUE(Has(alice, "code=0 ")) << alice;
  EXPECT_TRUE(Has(alice,
                  "script=#!/bin/sh\nwandb login $WANDB_API_KEY\n args=--token=hunter2 env=WANDB_API_KEY=wk-123 "
                  "cwd=/srv/private/alice out=/srv/private/alice/%j.out err=/srv/private/alice/%j.err hidden= "))
      << alice;
  const std::string admin = As(kGroupAdmin, h_, {"get", id, "env"});
  EXPECT_TRUE(Has(admin, "args=--token=hunter2 env=WANDB_API_KEY=wk-123 cwd=/srv/private/alice ")) << admin;
  const v1::Job root = h_.Get(IdOf(sub));  // the test itself: root
  EXPECT_EQ(root.spec().command(0), "--token=hunter2");
  EXPECT_EQ(root.hidden_fields_size(), 0);

  // A Watch of bob's gets alice's job redacted too; root's (an admin's) the whole job.
  const std::string watch = As(kBob, h_, {"watch"});
  EXPECT_TRUE(Has(watch, "code=0 kind=state user=nobody ")) << watch;
  EXPECT_TRUE(Has(watch, "hidden=spec.script,")) << watch;
  for (const char* s : kSecrets) EXPECT_FALSE(Has(watch, s)) << s << " in " << watch;
  grpc::ClientContext wctx;
  v1::WatchRequest wreq;
  wreq.set_send_initial(true);
  auto stream = h_.jobs->Watch(&wctx, wreq);  // as root: full
  v1::JobEvent ev;
  ASSERT_TRUE(stream->Read(&ev));
  EXPECT_EQ(ev.job().spec().working_dir(), "/srv/private/alice");
  wctx.TryCancel();
  (void)stream->Finish();
}

// private_data [jobs, users]: bob sees nothing of alice's job, not even that it exists.
TEST_F(Privacy, PrivateJobsAndUsersHideOthersJobsAndNames) {
  h_.config.private_data = PrivateData{.jobs = true, .names = true, .users = true};
  h_.Start();
  const uint64_t id = IdOf(As(kAlice, h_, {"submit", "-", "-"}));
  ASSERT_GT(id, 0u);
  const std::string bob_job = As(kBob, h_, {"submit", "-", "-"});
  ASSERT_TRUE(Has(bob_job, "code=0 ")) << bob_job;
  const std::string get = As(kBob, h_, {"get", std::to_string(id)});
  EXPECT_TRUE(Has(get, Code(grpc::StatusCode::NOT_FOUND))) << get;
  EXPECT_TRUE(Has(get, "msg=job " + std::to_string(id) + ": no such job")) << get;
  const std::string list = As(kBob, h_, {"list"});
  EXPECT_TRUE(Has(list, "code=0 jobs=" + std::to_string(IdOf(bob_job)) + ":uid:3002:")) << list;
  EXPECT_FALSE(Has(list, "nobody")) << list;
  EXPECT_TRUE(Has(As(kBob, h_, {"list", "nobody"}), Code(grpc::StatusCode::PERMISSION_DENIED)));
  const std::string cancel = As(kBob, h_, {"cancel", std::to_string(id)});
  EXPECT_TRUE(Has(cancel, Code(grpc::StatusCode::NOT_FOUND))) << cancel;
  EXPECT_FALSE(Has(cancel, "nobody")) << cancel;
  EXPECT_TRUE(Has(As(kBob, h_, {"watch", std::to_string(id)}), Code(grpc::StatusCode::NOT_FOUND)));
  const std::string watch = As(kBob, h_, {"watch"});
  EXPECT_TRUE(Has(watch, "code=0 kind=state user=uid:3002 ")) << "only bob's own job: " << watch;
  EXPECT_TRUE(Has(As(kAlice, h_, {"get", std::to_string(id)}), "code=0 user=nobody ")) << "the owner sees it";
  EXPECT_TRUE(Has(As(kGroupAdmin, h_, {"list"}), ":nobody:#!/bin/sh")) << "an admin sees everything";
}

TEST_F(Privacy, PrivateUsersAloneRedactsNamesButListsTheJob) {
  h_.config.private_data = PrivateData{.jobs = false, .names = false, .users = true};
  h_.Start();
  const uint64_t id = IdOf(As(kAlice, h_, {"submit", "-", "-"}));
  const std::string get = As(kBob, h_, {"get", std::to_string(id)});
  EXPECT_TRUE(Has(get, "code=0 user= uid=0 name=secret-run account= ")) << get;
  EXPECT_TRUE(Has(get, ",user,uid,gid,spec.account ")) << get;
  const std::string cancel = As(kBob, h_, {"cancel", std::to_string(id)});
  EXPECT_TRUE(Has(cancel, Code(grpc::StatusCode::PERMISSION_DENIED))) << cancel;
  EXPECT_TRUE(Has(cancel, "it is not yours")) << cancel;
  EXPECT_FALSE(Has(cancel, "nobody")) << cancel;
}

// HTTP: without the token, the private fields are redacted; with it, an admin's view; a Host
// that is not one of the server's names (DNS rebinding) gets 421, a foreign Origin 403.
TEST_F(Privacy, HttpRedactsWithoutTokenAndChecksHostAndOrigin) {
  h_.config.http_listen = "127.0.0.1:0";
  { std::ofstream(h_.dir.File("http-token")) << "adm1n-t0ken\n"; }
  h_.config.http.admin_token_file = h_.dir.File("http-token");
  h_.Start();
  const int port = h_.daemon->http_port();
  ASSERT_GT(port, 0);
  const uint64_t id = IdOf(As(kAlice, h_, {"submit", "-", "-"}));
  const std::string path = "/api/v1/jobs/" + std::to_string(id);
  const std::string host = "Host: 127.0.0.1:" + std::to_string(port) + "\r\n";

  auto anon = HttpGet(port, path, host);
  EXPECT_EQ(anon.first, 200);
  EXPECT_TRUE(Has(anon.second, "\"name\":\"secret-run\"")) << anon.second;
  for (const char* s : kSecrets) EXPECT_FALSE(Has(anon.second, s)) << s << " in " << anon.second;
  EXPECT_TRUE(Has(anon.second, "\"hidden_fields\":[\"spec.script\"")) << anon.second;
  auto list = HttpGet(port, "/api/v1/jobs?user=nobody", host);
  EXPECT_EQ(list.first, 200);
  EXPECT_TRUE(Has(list.second, "secret-run")) << list.second;
  for (const char* s : kSecrets) EXPECT_FALSE(Has(list.second, s)) << s << " in " << list.second;

  auto admin = HttpGet(port, path, host + "Authorization: Bearer adm1n-t0ken\r\n");
  EXPECT_EQ(admin.first, 200);
  EXPECT_TRUE(Has(admin.second, "--token=hunter2")) << admin.second;
  EXPECT_TRUE(Has(admin.second, "/srv/private/alice")) << admin.second;
  EXPECT_FALSE(Has(admin.second, "wk-123")) << "the environment never goes over HTTP";
  EXPECT_EQ(HttpGet(port, path, host + "Authorization: Bearer wrong\r\n").first, 401);

  auto rebound = HttpGet(port, path, "Host: evil.example:" + std::to_string(port) + "\r\n");
  EXPECT_EQ(rebound.first, 421);
  EXPECT_TRUE(Has(rebound.second, "evil.example")) << rebound.second;
  EXPECT_FALSE(Has(rebound.second, "secret-run")) << rebound.second;
  EXPECT_EQ(HttpGet(port, "/healthz", "Host: evil.example\r\n").first, 421) << "every route";
  EXPECT_EQ(HttpGet(port, "/no/such/page", "Host: evil.example\r\n").first, 421) << "even a 404";
  EXPECT_EQ(HttpGet(port, path, host + "Origin: https://evil.example\r\n").first, 403);
  EXPECT_EQ(HttpGet(port, path, host + "Origin: http://127.0.0.1:" + std::to_string(port) + "\r\n").first, 200);
  EXPECT_EQ(HttpGet(port, "/healthz", "Host: localhost\r\n").first, 200);
}

// Access rules: urgent only for alice (by user) and admins; account ml only for alice; bob is
// refused both on submit and on update, alice allowed, an admin allowed everything.
TEST_F(Privacy, ClassAndAccountRulesOnSubmitAndUpdate) {
  h_.config.access.classes["urgent"] = AccessList{.users = {"nobody"}, .groups = {"oncall"}};
  h_.config.access.classes["high"] = AccessList{.groups = {"gid:3002"}};  // bob's group (no name)
  h_.config.access.accounts["ml"] = AccessList{.users = {"nobody"}};
  h_.config.access.default_accounts["nobody"] = "ml";
  h_.Start();
  const std::string urgent = As(kBob, h_, {"submit", "urgent", "-"});
  EXPECT_TRUE(Has(urgent, Code(grpc::StatusCode::PERMISSION_DENIED))) << urgent;
  EXPECT_TRUE(Has(urgent,
                  "msg=priority_class: user uid:3002 (groups gid:3002) may not use class urgent: "
                  "access.classes.urgent allows users [nobody], groups [oncall]"))
      << urgent;
  const std::string ml = As(kBob, h_, {"submit", "-", "ml"});
  EXPECT_TRUE(Has(ml, Code(grpc::StatusCode::PERMISSION_DENIED))) << ml;
  EXPECT_TRUE(Has(ml, "may not charge account ml: access.accounts.ml allows users [nobody]")) << ml;
  const std::string own = As(kBob, h_, {"submit", "normal", "physics"});
  ASSERT_TRUE(Has(own, "code=0 ")) << own;
  const std::string bob_id = std::to_string(IdOf(own));
  const std::string up = As(kBob, h_, {"update", bob_id, "urgent"});
  EXPECT_TRUE(Has(up, Code(grpc::StatusCode::PERMISSION_DENIED))) << up;
  EXPECT_TRUE(Has(up, "charging account physics may not use class urgent")) << up;
  EXPECT_TRUE(Has(As(kBob, h_, {"update", bob_id, "low"}), "code=0 class=low")) << "open classes stay open";
  EXPECT_TRUE(Has(As(kBob, h_, {"update", bob_id, "high"}), "code=0 class=high")) << "by bob's group";
  const std::string alice_high = As(kAlice, h_, {"submit", "high", "-"});
  EXPECT_TRUE(Has(alice_high, Code(grpc::StatusCode::PERMISSION_DENIED))) << alice_high;
  EXPECT_TRUE(Has(alice_high, "user nobody (groups nogroup) charging account ml may not use class high"))
      << "alice's default account ml, her group from the group database: " << alice_high;

  const std::string alice = As(kAlice, h_, {"submit", "urgent", "-"});
  ASSERT_TRUE(Has(alice, "code=0 ")) << alice;
  EXPECT_TRUE(Has(As(kAlice, h_, {"get", std::to_string(IdOf(alice))}), " account=ml class=urgent "))
      << "the default account";
  EXPECT_TRUE(Has(As(kGroupAdmin, h_, {"submit", "urgent", "ml"}), "code=0 ")) << "admins pass";
  EXPECT_TRUE(Has(As(kGroupAdmin, h_, {"update", bob_id, "urgent"}), "code=0 class=urgent")) << "admins pass";
}

}  // namespace
}  // namespace phalanx::service::testing
