//===- ThreadPool.cpp - Fork-join parallel loops for CPU kernels ----------===//
#include "ThreadPool.h"

#include <algorithm>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tessel::runtime::cpu {

namespace {
inline void cpuRelax() {
#if defined(__x86_64__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}
constexpr int kSpinIterations = 256;
} // namespace

ThreadPool::ThreadPool(int threads) : numThreads(std::max(1, threads)) {
  for (int i = 1; i < numThreads; ++i)
    workers.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu);
    stopping = true;
    generation.fetch_add(1);
  }
  cv.notify_all();
  for (auto &w : workers)
    w.join();
}

void ThreadPool::runChunks(uint32_t jobId) {
  while (true) {
    uint64_t w = work.load(std::memory_order_acquire);
    if (static_cast<uint32_t>(w >> 32) != jobId)
      return;
    int64_t c = static_cast<int64_t>(w & 0xffffffffu);
    int64_t chunks = numChunks.load(std::memory_order_relaxed);
    if (c >= chunks)
      return;
    if (!work.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel))
      continue;
    // Chunk c is ours and unfinished, so the loop's fields are stable.
    int64_t n = jobN.load(std::memory_order_relaxed);
    (*job.load(std::memory_order_relaxed))(n * c / chunks, n * (c + 1) / chunks);
    pending.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::workerLoop() {
  // Generation 0 is the one at construction: a worker that starts late
  // must still see every later loop (and the shutdown).
  uint64_t seen = 0;
  while (true) {
    // Spin for a while, then sleep until the next loop.
    int spins = 0;
    while (generation.load(std::memory_order_acquire) == seen &&
           spins < kSpinIterations) {
      cpuRelax();
      ++spins;
    }
    if (generation.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return generation.load() != seen || stopping; });
    }
    seen = generation.load(std::memory_order_acquire);
    if (stopping)
      return;
    runChunks(static_cast<uint32_t>(work.load(std::memory_order_acquire) >> 32));
  }
}

void ThreadPool::parallelFor(int64_t n, int64_t grain,
                             const std::function<void(int64_t, int64_t)> &fn) {
  if (n <= 0)
    return;
  int64_t chunks = std::min<int64_t>(numThreads, n / std::max<int64_t>(grain, 1));
  if (chunks <= 1) {
    fn(0, n);
    return;
  }
  uint32_t id;
  {
    std::lock_guard<std::mutex> lock(mu);
    id = ++jobCounter;
    job.store(&fn, std::memory_order_relaxed);
    jobN.store(n, std::memory_order_relaxed);
    numChunks.store(chunks, std::memory_order_relaxed);
    pending.store(chunks, std::memory_order_relaxed);
    work.store(static_cast<uint64_t>(id) << 32, std::memory_order_release);
    generation.fetch_add(1, std::memory_order_release);
  }
  cv.notify_all();
  runChunks(id);
  while (pending.load(std::memory_order_acquire) > 0)
    cpuRelax();
}

} // namespace tessel::runtime::cpu
