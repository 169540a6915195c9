// phalanxd with a filling disk under the store (store.min_free, docs/store.md "Free space"):
// below the reserve a submission is refused RESOURCE_EXHAUSTED with a message naming the path,
// the free bytes and the setting; a running job still ends and its end is stored; once space
// is freed submissions are accepted again. First with an injected free-space reader (any
// user), then on a real small tmpfs filled with a file (root only: mount).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <string>

#include "daemon_harness.h"
#include "service/store_space.h"

namespace phalanx::service::testing {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// The value of an unlabelled metric in a /metrics body; -1 when absent.
double Metric(const std::string& body, const std::string& name) {
  const size_t at = body.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::strtod(body.c_str() + at + name.size() + 2, nullptr);
}

// Runs a job on node0, then: refused below the reserve, the job's end stored, accepted again.
// `fill` makes the store's file system low on space, `free` frees it.
void RefuseThenRecover(Harness& h, const std::string& dir, const std::function<void()>& fill,
                       const std::function<void()>& free) {
  FakeAgent agent(h.AgentTarget(), "node0");
  ASSERT_TRUE(agent.Join());
  const uint64_t running = h.SubmitOk(Harness::Spec(8, "running"));
  auto launch = agent.WaitLaunch(running);
  ASSERT_TRUE(launch);
  ASSERT_TRUE(h.WaitState(running, v1::JOB_STATE_RUNNING));
  const uint64_t pending = h.SubmitOk(Harness::Spec(8, "pending"));  // waits for node0

  fill();
  uint64_t id = 0;
  grpc::Status st = h.Submit(Harness::Spec(1, "refused"), &id);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  EXPECT_NE(st.error_message().find("store: only "), std::string::npos) << st.error_message();
  EXPECT_NE(st.error_message().find(" free on " + dir + " (store.min_free "), std::string::npos) << st.error_message();
  EXPECT_NE(st.error_message().find("running jobs continue"), std::string::npos) << st.error_message();
  {  // Holding a job is a user's write too.
    grpc::ClientContext ctx;
    v1::JobRef ref;
    ref.set_job_id(pending);
    v1::Job out;
    EXPECT_EQ(h.jobs->Hold(&ctx, ref, &out).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  }

  // The scheduler's own writes go on: the running job ends, its end is stored, the pending
  // job starts on the freed node.
  ASSERT_TRUE(agent.Exit(running, launch->launch_id(), 0));
  ASSERT_TRUE(h.WaitState(running, v1::JOB_STATE_COMPLETED));
  EXPECT_TRUE(agent.WaitExitStored(launch->launch_id()));
  EXPECT_TRUE(agent.WaitLaunch(pending).has_value());
  EXPECT_FALSE(h.daemon->config().db_path.empty());

  free();
  // Accepted again (the reading is cached for at most store_space_cache_s).
  ASSERT_TRUE(WaitFor([&] {
    uint64_t again = 0;
    return h.Submit(Harness::Spec(1, "again"), &again).ok();
  }));
}

TEST(DaemonStoreSpace, InjectedReaderRefusesBelowTheReserveAndRecovers) {
  Harness h;
  std::atomic<uint64_t> free{uint64_t{10} << 30};
  Daemon::Options o;
  o.store_free_bytes = [&free](const std::string&) -> Result<uint64_t> { return free.load(); };
  o.store_space_cache_s = 0;
  h.config.http_listen = "127.0.0.1:0";
  h.Start(o);
  const std::string dir = std::filesystem::path(h.config.db_path).parent_path().string();
  const int port = h.daemon->http_port();
#ifdef PHALANX_HAVE_HTTP
  ASSERT_GT(port, 0) << "built with HTTP, yet no HTTP listener on 127.0.0.1:0";
#endif
  const auto metrics = [&] { return HttpGet(port, "/metrics").second; };
  RefuseThenRecover(
      h, dir,
      [&] {
    free = 12 * kMiB;
    if (port <= 0) return;  // built without HTTP
    // /healthz stays 200; the condition is on /metrics.
    EXPECT_EQ(HttpGet(port, "/healthz").first, 200);
    const std::string m = metrics();
    EXPECT_EQ(Metric(m, "phalanx_store_low_space"), 1) << m;
    EXPECT_EQ(Metric(m, "phalanx_store_free_bytes"), static_cast<double>(12 * kMiB)) << m;
      },
      [&] {
    free = uint64_t{10} << 30;
    if (port <= 0) return;
    const std::string m = metrics();
    EXPECT_EQ(Metric(m, "phalanx_store_low_space"), 0) << m;
    EXPECT_EQ(Metric(m, "phalanx_store_free_bytes"), static_cast<double>(uint64_t{10} << 30)) << m;
  });
}

// Reads one value of a query on a SQLite file.
std::string Query(const std::string& db, const std::string& sql) {
  sqlite3* c = nullptr;
  std::string out = "<open failed>";
  if (sqlite3_open_v2(db.c_str(), &c, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    out = "<prepare failed: " + std::string(sqlite3_errmsg(c)) + ">";
    if (sqlite3_prepare_v2(c, sql.c_str(), -1, &s, nullptr) == SQLITE_OK) {
      out = sqlite3_step(s) == SQLITE_ROW ? reinterpret_cast<const char*>(sqlite3_column_text(s, 0)) : "<no row>";
      sqlite3_finalize(s);
    }
  }
  sqlite3_close(c);
  return out;
}

// A real 16 MiB tmpfs under the store with store.min_free 8 MiB, filled with a file.
TEST(DaemonStoreSpace, RealTmpfsFilledUnderTheReserve) {
  if (geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  Harness h;
  const std::string mnt = h.dir.File("state");
  std::filesystem::create_directories(mnt);
  if (mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=16m,mode=0755") != 0) {
    // Root inside a container without CAP_SYS_ADMIN: the flow is covered with the injected
    // reader (InjectedReaderRefusesBelowTheReserveAndRecovers); tests/skip-allowlist.txt says so.
    if (errno == EPERM) GTEST_SKIP() << "no permission to mount a tmpfs: " << std::strerror(errno);
    FAIL() << "mount tmpfs: " << std::strerror(errno);
  }
  struct Unmount {
    std::string path;
    ~Unmount() { umount2(path.c_str(), MNT_DETACH); }
  } unmount{mnt};
  h.config.store_min_free = 8 * kMiB;
  Daemon::Options o;
  o.store_space_cache_s = 0;  // statvfs each time: the test sees its own fill at once
  h.Start(o);
  const std::string filler = mnt + "/filler";
  std::vector<uint64_t> acked;
  const auto fill = [&] {
    auto free = StatvfsFreeBytes(mnt);
    ASSERT_TRUE(free) << free.error().ToString();
    ASSERT_GT(*free, 4 * kMiB);
    std::ofstream f(filler, std::ios::binary);
    const std::string chunk(1 << 16, 'x');
    for (uint64_t n = 0; n + 4 * kMiB < *free; n += chunk.size()) f.write(chunk.data(), chunk.size());
    f.close();
    auto after = StatvfsFreeBytes(mnt);
    ASSERT_TRUE(after);
    ASSERT_LT(*after, 8 * kMiB) << "filled under the reserve";
  };
  RefuseThenRecover(h, mnt, fill, [&] { std::filesystem::remove(filler); });
  grpc::ClientContext ctx;
  v1::ListJobsRequest req;
  req.set_include_finished(true);
  v1::ListJobsResponse resp;
  ASSERT_TRUE(h.jobs->List(&ctx, req, &resp).ok());
  const int listed = resp.jobs_size();
  h.Stop();
  EXPECT_EQ(Query(h.config.db_path, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(Query(h.config.db_path, "SELECT COUNT(*) FROM jobs"), std::to_string(listed))
      << "every acknowledged job is in the file";
  EXPECT_EQ(listed, 3) << "running, pending, again: the refused one is not there";
}

}  // namespace
}  // namespace phalanx::service::testing
