//===- ShmFutex.h - Waits of the shm communicator --------------*- C++ -*-===//
//
// How members of a shared-memory segment wait for each other: spin briefly
// (not where the rank's core runs other ranks too: CommOptions::sharedCore),
// then yield, then sleep on a futex word in the segment (woken by the next
// arrival); every kCheckEvery the waiter wakes to check that the peers'
// processes still live (processGone) and the timeout. The futex words are
// shared between processes (not FUTEX_PRIVATE).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_COMM_SHMFUTEX_H
#define TESSEL_RUNTIME_COMM_SHMFUTEX_H

#include <atomic>
#include <chrono>
#include <cstdint>

namespace tessel::runtime::shm {

/// The wait policy: spin this long (unless the core is shared), then yield
/// up to kYieldFor since the wait began, then sleep on the futex; check the
/// peers and the timeout every kCheckEvery.
constexpr auto kSpinFor = std::chrono::microseconds(20);
constexpr auto kYieldFor = std::chrono::milliseconds(2);
constexpr auto kCheckEvery = std::chrono::milliseconds(50);

/// A spinning waiter's pause.
inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// Wrap-safe "counter `v` has reached `target`".
inline bool reached(uint32_t v, uint32_t target) {
  return static_cast<int32_t>(v - target) >= 0;
}

/// Sleeps while `*word` is `expected`, at most `upTo` (or until woken, or a
/// signal).
void futexWait(std::atomic<uint32_t> *word, uint32_t expected,
               std::chrono::nanoseconds upTo);

/// Wakes every process asleep on `word`.
void futexWake(std::atomic<uint32_t> *word);

/// Whether process `pid` has ended (a zombie not yet reaped by its parent
/// still answers kill(), hence /proc). This process and pids <= 0 never
/// have.
bool processGone(int32_t pid);

} // namespace tessel::runtime::shm

#endif // TESSEL_RUNTIME_COMM_SHMFUTEX_H
