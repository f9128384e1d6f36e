//===- ThreadPool.h - Fork-join parallel loops for CPU kernels --*- C++ -*-===//
//
// Parallel loops run on OpenMP's thread team, the same team oneDNN's GEMMs
// use: one set of threads for the whole executor, so a kernel's workers never
// compete for cores with a GEMM's (two pools, each spinning after its own
// loops, cost up to 2x on a 2-core machine).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CPU_THREADPOOL_H
#define TESSEL_RUNTIME_CPU_THREADPOOL_H

#include <cstdint>
#include <functional>

namespace tessel::runtime::cpu {

/// Up to `threads` threads (the caller included) for one parallel loop at a
/// time.
class ThreadPool {
public:
  explicit ThreadPool(int threads) : numThreads(threads < 1 ? 1 : threads) {}
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int size() const { return numThreads; }

  /// Calls fn(begin, end) on disjoint chunks covering [0, n), one per
  /// thread; chunks hold at least `grain` iterations, so small loops run on
  /// the caller alone. `fn` must not throw.
  void parallelFor(int64_t n, int64_t grain,
                   const std::function<void(int64_t, int64_t)> &fn);

private:
  int numThreads;
};

} // namespace tessel::runtime::cpu

#endif // TESSEL_RUNTIME_CPU_THREADPOOL_H
