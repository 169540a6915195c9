// Thread-safety annotations (Clang's -Wthread-safety), as in LevelDB's port/thread_annotations.h,
// and a Mutex, MutexLock and CondVar that carry them. Under GCC the macros expand to nothing and
// serve as documentation; tests/thread_safety_check.sh (CTest tooling.thread_safety) runs Clang's
// analysis over every file that includes this header, so a member marked PHALANX_GUARDED_BY(mu_)
// touched without mu_ held fails CI.
// Header-only, standard library only (scheduler/util is, like the core, std-only).
// Thread-safety: Mutex is a std::mutex; the macros are compile-time only.
#pragma once

#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define PHALANX_TSA(x) __attribute__((x))
#else
#define PHALANX_TSA(x)
#endif

#define PHALANX_CAPABILITY(x) PHALANX_TSA(capability(x))
#define PHALANX_SCOPED_CAPABILITY PHALANX_TSA(scoped_lockable)
#define PHALANX_GUARDED_BY(x) PHALANX_TSA(guarded_by(x))
#define PHALANX_REQUIRES(...) PHALANX_TSA(requires_capability(__VA_ARGS__))
#define PHALANX_EXCLUDES(...) PHALANX_TSA(locks_excluded(__VA_ARGS__))
#define PHALANX_ACQUIRE(...) PHALANX_TSA(acquire_capability(__VA_ARGS__))
#define PHALANX_RELEASE(...) PHALANX_TSA(release_capability(__VA_ARGS__))
// For a function the analysis cannot follow; say why next to each use.
#define PHALANX_NO_THREAD_SAFETY_ANALYSIS PHALANX_TSA(no_thread_safety_analysis)

namespace phalanx {

class PHALANX_CAPABILITY("mutex") Mutex {
 public:
  void Lock() PHALANX_ACQUIRE() { mu_.lock(); }
  void Unlock() PHALANX_RELEASE() { mu_.unlock(); }
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

// Holds a Mutex for a scope.
class PHALANX_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) PHALANX_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() PHALANX_RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// A condition variable waited on with a Mutex held (the caller holds it through MutexLock).
class CondVar {
 public:
  explicit CondVar(Mutex* mu) : mu_(mu) {}
  // Atomically releases the mutex given to the constructor and waits; holds it again on return.
  // The caller must hold that mutex. Not annotated (as in LevelDB): PHALANX_REQUIRES(mu_) would
  // name this CondVar's pointer, which the analysis cannot match with the caller's member (it
  // reports "requires holding mutex 'cv_.mu_'" at every call).
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_->native(), std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  Mutex* const mu_;
  std::condition_variable cv_;
};

}  // namespace phalanx
