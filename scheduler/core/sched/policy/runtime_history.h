// RuntimeHistory: how long finished jobs ran, by (user, job name, size), for runtime prediction
// (runtime_predicted.cc). After Tsafrir, Etsion and Feitelson, "Backfilling Using
// System-Generated Predictions Rather Than User Runtime Estimates" (IEEE TPDS 18(6), 2007): the
// prediction is the mean run time of the last two jobs of the same kind, never above the
// walltime asked. The Scheduler records every job that ends (JobEnded); kept in memory only (a
// restarted daemon learns again).
// Thread-safety: none; the Scheduler's thread only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "core/common/time.h"

namespace phalanx {

class RuntimeHistory {
 public:
  // A job of `user`, `name` and `gpus` GPUs ran `seconds` in all.
  void Record(const std::string& user, const std::string& name, uint32_t gpus, Duration seconds);
  // The mean of the last two run times recorded for the same (user, name, gpus) (one if only one
  // is known); else of the same user's last two jobs of that size whatever their names (a trace
  // names every job differently); nullopt when neither is known.
  std::optional<Duration> Predict(const std::string& user, const std::string& name, uint32_t gpus) const;

 private:
  struct Last {
    Duration a = 0, b = 0;  // the latest, the one before
    uint32_t n = 0;         // how many recorded (capped at 2)
  };
  static void Push(Last& l, Duration seconds);
  std::map<std::tuple<std::string, std::string, uint32_t>, Last> by_name_;
  std::map<std::pair<std::string, uint32_t>, Last> by_size_;
};

}  // namespace phalanx
