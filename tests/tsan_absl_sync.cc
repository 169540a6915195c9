// Linked into the test executables of a ThreadSanitizer build only (PHALANX_SANITIZE=thread,
// tests/CMakeLists.txt): tells TSan about the locking Debian's gRPC does with absl::Mutex.
//
// Debian's gRPC and Abseil are not built with TSan. gRPC hands calls, messages and reactors from
// one of its threads to another under absl::Mutex, whose lock and unlock TSan cannot see, so
// every such handoff looked like a race, in gRPC's inline header code and in Phalanx's reactors
// alike (a reactor created on one gRPC thread, called back or deleted on another). These
// definitions take the place of absl's Mutex and CondVar entry points that gRPC's libraries call
// (the executable's definition wins over libabsl_synchronization's), call the real ones, and
// mark each lock as an acquire and each unlock as a release on the mutex's address. The rest of
// gRPC's hidden synchronization (its atomics) stays invisible: tests/tsan.supp covers that.
//
// The symbols are absl's mangled names in Debian 12's Abseil (inline namespace debian3); under
// another Abseil they are simply not called. Each is looked up once with dlsym(RTLD_NEXT).
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

// absl::Duration and absl::Time (one Duration) by value: 16 trivially copyable bytes.
struct AbslDuration {
  int64_t hi;
  uint32_t lo;
};

template <typename Fn>
Fn Real(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (f == nullptr) {
    std::fprintf(stderr, "tsan_absl_sync: %s not found\n", name);
    std::abort();
  }
  return reinterpret_cast<Fn>(f);
}

}  // namespace

#define PHX_ABSL(ret, name, mangled, ...)            \
  extern "C" ret name(__VA_ARGS__) __asm__(mangled); \
  extern "C" ret name(__VA_ARGS__)

// void absl::Mutex::Lock()
PHX_ABSL(void, PhxAbslMutexLock, "_ZN4absl7debian35Mutex4LockEv", void* mu) {
  static auto real = Real<void (*)(void*)>("_ZN4absl7debian35Mutex4LockEv");
  real(mu);
  __tsan_acquire(mu);
}

// void absl::Mutex::Unlock()
PHX_ABSL(void, PhxAbslMutexUnlock, "_ZN4absl7debian35Mutex6UnlockEv", void* mu) {
  static auto real = Real<void (*)(void*)>("_ZN4absl7debian35Mutex6UnlockEv");
  __tsan_release(mu);
  real(mu);
}

// bool absl::Mutex::TryLock()
PHX_ABSL(bool, PhxAbslMutexTryLock, "_ZN4absl7debian35Mutex7TryLockEv", void* mu) {
  static auto real = Real<bool (*)(void*)>("_ZN4absl7debian35Mutex7TryLockEv");
  const bool locked = real(mu);
  if (locked) __tsan_acquire(mu);
  return locked;
}

// void absl::ReleasableMutexLock::Release(): unlocks the Mutex its first member points to.
PHX_ABSL(void, PhxAbslReleasableRelease, "_ZN4absl7debian319ReleasableMutexLock7ReleaseEv", void* lock) {
  static auto real = Real<void (*)(void*)>("_ZN4absl7debian319ReleasableMutexLock7ReleaseEv");
  __tsan_release(*static_cast<void**>(lock));
  real(lock);
}

// The waits unlock the Mutex and lock it again; a signal orders the waker before the woken.
// void absl::CondVar::Wait(absl::Mutex*)
PHX_ABSL(void, PhxAbslCondVarWait, "_ZN4absl7debian37CondVar4WaitEPNS0_5MutexE", void* cv, void* mu) {
  static auto real = Real<void (*)(void*, void*)>("_ZN4absl7debian37CondVar4WaitEPNS0_5MutexE");
  __tsan_release(mu);
  real(cv, mu);
  __tsan_acquire(mu);
  __tsan_acquire(cv);
}

// bool absl::CondVar::WaitWithTimeout(absl::Mutex*, absl::Duration)
PHX_ABSL(bool, PhxAbslCondVarWaitWithTimeout, "_ZN4absl7debian37CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE",
         void* cv, void* mu, AbslDuration timeout) {
  static auto real = Real<bool (*)(void*, void*, AbslDuration)>(
      "_ZN4absl7debian37CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  __tsan_release(mu);
  const bool timed_out = real(cv, mu, timeout);
  __tsan_acquire(mu);
  __tsan_acquire(cv);
  return timed_out;
}

// bool absl::CondVar::WaitWithDeadline(absl::Mutex*, absl::Time)
PHX_ABSL(bool, PhxAbslCondVarWaitWithDeadline, "_ZN4absl7debian37CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE",
         void* cv, void* mu, AbslDuration deadline) {
  static auto real =
      Real<bool (*)(void*, void*, AbslDuration)>("_ZN4absl7debian37CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  __tsan_release(mu);
  const bool timed_out = real(cv, mu, deadline);
  __tsan_acquire(mu);
  __tsan_acquire(cv);
  return timed_out;
}

// void absl::CondVar::Signal()
PHX_ABSL(void, PhxAbslCondVarSignal, "_ZN4absl7debian37CondVar6SignalEv", void* cv) {
  static auto real = Real<void (*)(void*)>("_ZN4absl7debian37CondVar6SignalEv");
  __tsan_release(cv);
  real(cv);
}

// void absl::CondVar::SignalAll()
PHX_ABSL(void, PhxAbslCondVarSignalAll, "_ZN4absl7debian37CondVar9SignalAllEv", void* cv) {
  static auto real = Real<void (*)(void*)>("_ZN4absl7debian37CondVar9SignalAllEv");
  __tsan_release(cv);
  real(cv);
}
