//===- plan_bench.cpp - the buffer planner alone, before and after --------===//
//
// Prints the time and arena of tessel::runtime::planBuffers against the
// all-pairs greedy-by-size planner it replaced (planBuffersAllPairs, issue
// 18), for
//   - chains of N buffers, each live for two instructions (a Relu chain);
//   - "training-like" programs: N/2 activations saved by a forward pass and
//     freed in reverse order by the backward pass, plus short temporaries.
// The all-pairs planner is skipped above 100k buffers (it takes minutes).
//
//   ninja -C build plan_bench && build/bin/plan_bench
//
//===----------------------------------------------------------------------===//
#include "tessel/runtime/BufferPlanner.h"

#include <chrono>
#include <cstdio>
#include <random>
#include <utility>
#include <vector>

using namespace tessel::runtime;

namespace {

std::vector<BufferLifetime> chain(int64_t n) {
  std::vector<BufferLifetime> b;
  for (int64_t i = 0; i < n; ++i)
    b.push_back({1024, i, i + 1});
  return b;
}

std::vector<BufferLifetime> training(int64_t n) {
  std::mt19937 rng(18);
  std::vector<BufferLifetime> b;
  const int64_t layers = n / 4, end = 4 * layers;
  for (int64_t l = 0; l < layers; ++l) {
    uint64_t act = 4096 * (1 + rng() % 4);
    b.push_back({act, 2 * l, end - 2 * l});            // saved activation
    b.push_back({act, 2 * l, 2 * l + 1});              // forward temporary
    b.push_back({act, end - 2 * l - 1, end - 2 * l});  // its gradient
    b.push_back({act / 2, end - 2 * l, end - 2 * l + 1}); // backward temporary
  }
  return b;
}

template <typename F> double seconds(F f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

} // namespace

int main() {
  std::printf("| program | buffers | planBuffers s | arena | all-pairs s | all-pairs arena |\n"
              "|---|---|---|---|---|---|\n");
  for (auto [name, make] :
       {std::pair{"chain", &chain}, std::pair{"training-like", &training}})
    for (int64_t n : {25000, 50000, 100000, 200000}) {
      std::vector<BufferLifetime> b = make(n);
      BufferPlan p;
      double t = seconds([&] { p = planBuffers(b); });
      if (n <= 25000 && !isValidPlan(b, p))
        std::printf("INVALID PLAN\n");
      uint64_t ref = 0;
      double tr = -1;
      if (n <= 100000)
        tr = seconds([&] { ref = planBuffersAllPairs(b).arenaSize; });
      if (tr < 0)
        std::printf("| %s | %zu | %.3f | %llu | (skipped) | |\n", name, b.size(),
                    t, (unsigned long long)p.arenaSize);
      else
        std::printf("| %s | %zu | %.3f | %llu | %.2f | %llu |\n", name,
                    b.size(), t, (unsigned long long)p.arenaSize, tr,
                    (unsigned long long)ref);
      std::fflush(stdout);
    }
  return 0;
}
