// FaultVfs: a SQLite VFS that forwards to the default one and fails writes or syncs on
// command -- LevelDB's FaultInjectionTestEnv, for a store whose I/O interface is SQLite's VFS.
// Register once, then open a Store with StoreOptions::vfs = FaultVfs::kName.
// Thread-safety: the controls are atomics; safe from any thread.
#pragma once

#include <cstdint>

namespace phalanx::store::testing {

class FaultVfs {
 public:
  static constexpr const char* kName = "phalanx-fault";
  static void Register();  // idempotent

  // After `n` more successful xWrite calls (on any file), every write fails with
  // SQLITE_IOERR_WRITE until Clear(). Negative: never.
  static void FailWritesAfter(int64_t n);
  // Same for xSync (SQLITE_IOERR_FSYNC).
  static void FailSyncsAfter(int64_t n);
  static void Clear();
  static int64_t writes();  // successful writes so far
  static int64_t syncs();
};

}  // namespace phalanx::store::testing
