//===- ThreadPool.cpp - Fork-join parallel loops for CPU kernels ----------===//
#include "ThreadPool.h"

#include <algorithm>
#include <omp.h>

namespace tessel::runtime::cpu {

void ThreadPool::parallelFor(int64_t n, int64_t grain,
                             const std::function<void(int64_t, int64_t)> &fn) {
  if (n <= 0)
    return;
  const int64_t chunks =
      std::min<int64_t>(numThreads, n / std::max<int64_t>(grain, 1));
  if (chunks <= 1) {
    fn(0, n);
    return;
  }
#pragma omp parallel num_threads(static_cast<int>(chunks))
  {
    // The team may be smaller than asked (OMP_THREAD_LIMIT, nesting): split
    // over the threads there are.
    const int64_t t = omp_get_thread_num(), team = omp_get_num_threads();
    const int64_t begin = n * t / team, end = n * (t + 1) / team;
    if (begin < end)
      fn(begin, end);
  }
}

} // namespace tessel::runtime::cpu
