//===- ThreadPool.h - Fork-join parallel loops for CPU kernels --*- C++ -*-===//
#ifndef TESSEL_RUNTIME_CPU_THREADPOOL_H
#define TESSEL_RUNTIME_CPU_THREADPOOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tessel::runtime::cpu {

/// A fixed set of worker threads running one parallel loop at a time; the
/// calling thread takes part. Workers spin briefly between loops (kernels
/// come back to back) and then sleep.
class ThreadPool {
public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int size() const { return numThreads; }

  /// Calls fn(begin, end) on disjoint chunks covering [0, n); chunks hold at
  /// least `grain` iterations, so small loops run on the caller alone.
  void parallelFor(int64_t n, int64_t grain,
                   const std::function<void(int64_t, int64_t)> &fn);

private:
  void workerLoop();
  void runChunks(uint32_t jobId);

  int numThreads;
  std::vector<std::thread> workers;
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<uint64_t> generation{0};
  std::atomic<bool> stopping{false};

  // The current loop.
  // The current loop. `work` packs (job id << 32 | next chunk) so a worker
  // can never claim a chunk of a loop other than the one it woke for.
  std::atomic<const std::function<void(int64_t, int64_t)> *> job{nullptr};
  std::atomic<int64_t> jobN{0}, numChunks{0};
  std::atomic<uint64_t> work{0};
  std::atomic<int64_t> pending{0};
  uint32_t jobCounter = 0;
};

} // namespace tessel::runtime::cpu

#endif // TESSEL_RUNTIME_CPU_THREADPOOL_H
