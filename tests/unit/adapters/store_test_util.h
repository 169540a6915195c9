// Helpers shared by the store tests: a temporary directory (mkdtemp, removed with its files),
// random job specs that exercise every JobSpec field, a field-by-field spec comparison, opening
// a store that must open, and StoreBackendTest: a fixture whose tests run once per backend
// (SQLite, and PostgreSQL in the test cluster of pg_cluster.h where this build has it).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "adapters/store/store.h"
#include "core/sched/job.h"
#ifdef PHALANX_HAVE_POSTGRES
#include "pg_cluster.h"
#endif

namespace phalanx::store::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "phalanx-store-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A spec with every field set from `rng`, including strings that need escaping.
inline JobSpec RandomSpec(std::mt19937& rng) {
  static const std::string kStrings[] = {"",
                                         "alice",
                                         "train run #3",
                                         "a=b c",
                                         "100%",
                                         "naïve",
                                         "tab\there",
                                         "new\nline",
                                         "x,y:z/w@v+u-t~s.r_q",
                                         std::string("nul\0byte", 8)};
  const auto pick = [&] { return kStrings[rng() % std::size(kStrings)]; };
  JobSpec s;
  s.name = pick();
  s.user = pick();
  s.account = pick();
  s.priority_class = pick();
  s.shape.gpus = rng() % 3 == 0 ? 0 : rng() % 4096;
  s.shape.nodes = rng() % 4;
  s.shape.gpus_per_node = rng() % 9;
  s.shape.level = static_cast<Level>(rng() % kLevelCount);
  s.shape.fit = static_cast<FitMode>(rng() % 3);
  s.shape.exclusive = rng() % 2;
  s.shape.rail_aligned = rng() % 2;
  s.min_gpus = rng() % 64;
  s.step_kind = static_cast<ElasticStep>(rng() % 3);
  s.step = rng() % 16;
  s.walltime = static_cast<Duration>(rng() % 100000);
  if (rng() % 3 != 0) s.preemptible = rng() % 2 == 0;
  s.checkpoint_interval = static_cast<Duration>(rng() % 7200);
  s.restart_cost = static_cast<Duration>(rng() % 600) - 5;  // negative must survive too
  s.held = rng() % 2;
  for (uint32_t i = rng() % 4; i > 0; --i) s.after_ok.push_back(1 + rng() % 1000000);
  s.submit = static_cast<Time>(rng() % 2000000000);
  // From `submit`, not a new draw, so the sequences other tests rely on stay the same.
  s.checkpoint_grace = s.submit % 3 == 0 ? 0 : static_cast<Duration>(s.submit % 900) - 5;
  return s;
}

inline void ExpectSpecEq(const JobSpec& a, const JobSpec& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.user, b.user);
  EXPECT_EQ(a.account, b.account);
  EXPECT_EQ(a.priority_class, b.priority_class);
  EXPECT_EQ(a.shape.gpus, b.shape.gpus);
  EXPECT_EQ(a.shape.nodes, b.shape.nodes);
  EXPECT_EQ(a.shape.gpus_per_node, b.shape.gpus_per_node);
  EXPECT_EQ(a.shape.level, b.shape.level);
  EXPECT_EQ(a.shape.fit, b.shape.fit);
  EXPECT_EQ(a.shape.exclusive, b.shape.exclusive);
  EXPECT_EQ(a.shape.rail_aligned, b.shape.rail_aligned);
  EXPECT_EQ(a.min_gpus, b.min_gpus);
  EXPECT_EQ(a.step_kind, b.step_kind);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.walltime, b.walltime);
  EXPECT_EQ(a.preemptible, b.preemptible);
  EXPECT_EQ(a.checkpoint_interval, b.checkpoint_interval);
  EXPECT_EQ(a.restart_cost, b.restart_cost);
  EXPECT_EQ(a.held, b.held);
  EXPECT_EQ(a.after_ok, b.after_ok);
  EXPECT_EQ(a.submit, b.submit);
  EXPECT_EQ(a.checkpoint_grace, b.checkpoint_grace);
}

// The store at `path`; null (and a failure) when it does not open.
inline std::unique_ptr<Store> OpenOrDie(const std::string& path, const StoreOptions& options = {}) {
  auto s = Store::Open(path, options);
  EXPECT_TRUE(s) << s.error().ToString();
  return s ? std::move(*s) : nullptr;
}

// A test that runs on each backend (TEST_P; INSTANTIATE_BOTH_BACKENDS below). Target(name)
// is where a store named `name` lives: a file in the test's temporary directory, or a fresh
// schema of the test cluster (the same name gives the same place within one test).
class StoreBackendTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
#ifdef PHALANX_HAVE_POSTGRES
    if (GetParam() == Backend::kPostgres) {
      std::string why;
      pg_ = PgCluster::Get(&why);
      if (pg_ == nullptr) GTEST_SKIP() << "no PostgreSQL test cluster: " << why;
    }
#endif
  }
  bool postgres() const { return GetParam() == Backend::kPostgres; }
  std::string Target(const std::string& name) {
    auto it = targets_.find(name);
    if (it != targets_.end()) return it->second;
    std::string target = dir_.File(name);
#ifdef PHALANX_HAVE_POSTGRES
    if (postgres()) target = pg_->NewDsn();
#endif
    targets_[name] = target;
    return target;
  }
  StoreOptions Options() const {
    StoreOptions o;
    o.backend = GetParam();
    return o;
  }
  std::unique_ptr<Store> Open(const std::string& name) { return OpenOrDie(Target(name), Options()); }

  TempDir dir_;
#ifdef PHALANX_HAVE_POSTGRES
  PgCluster* pg_ = nullptr;
#endif

 private:
  std::map<std::string, std::string> targets_;
};

inline std::string BackendName(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::kPostgres ? "postgresql" : "sqlite";
}

}  // namespace phalanx::store::testing

// Instantiates FIXTURE (a StoreBackendTest) as Sqlite/FIXTURE.NAME/sqlite and, where built,
// Postgres/FIXTURE.NAME/postgresql (ctest runs the Postgres/* tests in one process).
#ifdef PHALANX_HAVE_POSTGRES
#define INSTANTIATE_BOTH_BACKENDS(FIXTURE)                                                             \
  INSTANTIATE_TEST_SUITE_P(Sqlite, FIXTURE, ::testing::Values(::phalanx::store::Backend::kSqlite),     \
                           ::phalanx::store::testing::BackendName);                                    \
  INSTANTIATE_TEST_SUITE_P(Postgres, FIXTURE, ::testing::Values(::phalanx::store::Backend::kPostgres), \
                           ::phalanx::store::testing::BackendName)
#else
#define INSTANTIATE_BOTH_BACKENDS(FIXTURE)                                                         \
  INSTANTIATE_TEST_SUITE_P(Sqlite, FIXTURE, ::testing::Values(::phalanx::store::Backend::kSqlite), \
                           ::phalanx::store::testing::BackendName)
#endif
