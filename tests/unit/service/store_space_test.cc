// StoreSpace (store.min_free): the reserve's logic with an injected reader and clock, the size
// parser, and the config key's errors.
#include "service/store_space.h"

#include <gtest/gtest.h>

#include "service/daemon_config.h"

namespace phalanx::service {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(StoreSpace, ParsesSizesWithUnits) {
  EXPECT_EQ(*ParseByteSize("64MiB"), 64 * kMiB);
  EXPECT_EQ(*ParseByteSize("64 MiB"), 64 * kMiB);
  EXPECT_EQ(*ParseByteSize("64M"), 64 * kMiB);
  EXPECT_EQ(*ParseByteSize("64MB"), 64 * kMiB);
  EXPECT_EQ(*ParseByteSize("512KiB"), 512 * 1024u);
  EXPECT_EQ(*ParseByteSize("1.5GiB"), 1536 * kMiB);
  EXPECT_EQ(*ParseByteSize("1000000"), 1000000u);
  EXPECT_EQ(*ParseByteSize("0"), 0u);
  for (const char* bad : {"", "lots", "-1", "64XB", "1..5M", ".5M", "MiB", "1e30"}) {
    auto r = ParseByteSize(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find(std::string("got '") + bad + "'"), std::string::npos) << r.error().message;
  }
}

TEST(StoreSpace, FormatsBytes) {
  EXPECT_EQ(FormatBytes(512), "512 bytes");
  EXPECT_EQ(FormatBytes(64 * kMiB), "64 MiB");
  EXPECT_EQ(FormatBytes(12 * kMiB + 300 * 1024), "12.3 MiB");
  EXPECT_EQ(FormatBytes(uint64_t{3} << 30), "3 GiB");
}

struct Fake {
  uint64_t free = 0;
  int reads = 0;
  bool fail = false;
  double now = 100;
  StoreSpace Make(uint64_t min_free, double cache_s = 1) {
    return StoreSpace(
        {"/var/lib/phalanx", min_free, cache_s},
        [this](const std::string& dir) -> Result<uint64_t> {
          EXPECT_EQ(dir, "/var/lib/phalanx");
          ++reads;
          if (fail) return std::unexpected(Error{dir, "statvfs: Input/output error", ErrorCode::kInternal});
          return free;
        },
        [this] { return now; });
  }
};

TEST(StoreSpace, RefusesBelowTheReserveWithAMessageNamingPathFreeAndSetting) {
  Fake f;
  f.free = 1024 * kMiB;
  StoreSpace s = f.Make(64 * kMiB);
  EXPECT_TRUE(s.CheckUserWrite());
  EXPECT_FALSE(s.low());
  EXPECT_EQ(s.free_bytes(), 1024 * kMiB);

  f.free = 12 * kMiB + 300 * 1024;
  f.now += 1.5;
  auto st = s.CheckUserWrite();
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, ErrorCode::kResourceExhausted);
  EXPECT_EQ(st.error().message,
            "store: only 12.3 MiB free on /var/lib/phalanx (store.min_free 64 MiB): submissions and job changes are "
            "refused until space is freed; running jobs continue");
  EXPECT_TRUE(s.low());
  EXPECT_EQ(s.refusals(), 1u);

  // Exactly the reserve is enough.
  f.free = 64 * kMiB;
  f.now += 1.5;
  EXPECT_TRUE(s.CheckUserWrite());
  EXPECT_FALSE(s.low());
}

TEST(StoreSpace, ReadsAreCachedForCacheSeconds) {
  Fake f;
  f.free = 10 * kMiB;
  StoreSpace s = f.Make(64 * kMiB, 1.0);
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(s.CheckUserWrite());
  EXPECT_EQ(f.reads, 1) << "a flood of submissions reads the free space once per second";
  f.free = 100 * kMiB;
  f.now += 0.5;
  EXPECT_FALSE(s.CheckUserWrite()) << "still the cached reading";
  EXPECT_EQ(f.reads, 1);
  f.now += 0.6;
  EXPECT_TRUE(s.CheckUserWrite()) << "a fresh reading after 1 s";
  EXPECT_EQ(f.reads, 2);
}

TEST(StoreSpace, OffWhenZeroAndAReadErrorRefusesNothing) {
  Fake f;
  f.free = 0;
  StoreSpace off = f.Make(0);
  EXPECT_TRUE(off.CheckUserWrite());
  EXPECT_EQ(f.reads, 0) << "min_free 0: never reads";

  Fake g;
  g.fail = true;
  StoreSpace s = g.Make(64 * kMiB);
  EXPECT_TRUE(s.CheckUserWrite());
  EXPECT_FALSE(s.free_bytes().has_value());
  EXPECT_FALSE(s.low());
}

TEST(StoreSpace, StatvfsReadsARealDirectoryAndNamesAMissingOne) {
  auto r = StatvfsFreeBytes("/tmp");
  ASSERT_TRUE(r) << r.error().ToString();
  auto missing = StatvfsFreeBytes("/nonexistent/phalanx-store");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().ToString(), "/nonexistent/phalanx-store: statvfs: No such file or directory");
}

TEST(StoreSpace, ConfigKeyMinFree) {
  auto d = ParseDaemonConfig("", "s.yaml");
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_EQ(d->store_min_free, 64 * kMiB);
  auto c = ParseDaemonConfig("store:\n  min_free: 1GiB\n", "s.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->store_min_free, 1024 * kMiB);
  auto off = ParseDaemonConfig("store:\n  min_free: 0\n", "s.yaml");
  ASSERT_TRUE(off) << off.error().ToString();
  EXPECT_EQ(off->store_min_free, 0u);
  auto bad = ParseDaemonConfig("store:\n  path: /tmp/x.db\n  min_free: lots\n", "s.yaml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().ToString(),
            "s.yaml:3: store.min_free: expected a size in bytes (a number, or with a unit: 64MiB, 512KiB, 2GiB; 0: "
            "off), got 'lots'");
}

}  // namespace
}  // namespace phalanx::service
