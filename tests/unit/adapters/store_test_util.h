// Helpers shared by the store tests: a temporary directory (mkdtemp, removed with its files)
// and random job specs that exercise every JobSpec field.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <random>
#include <string>

#include "core/sched/job.h"

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
  static const std::string kStrings[] = {"", "alice", "train run #3", "a=b c", "100%", "naïve", "tab\there",
                                         "new\nline", "x,y:z/w@v+u-t~s.r_q", std::string("nul\0byte", 8)};
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

}  // namespace phalanx::store::testing
