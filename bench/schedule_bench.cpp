//===- schedule_bench.cpp - Time to generate, verify and simulate ---------===//
//
//   schedule_bench [schedule [p [m [v [repeats]]]]]
//
// Defaults: interleaved-1f1b, p=64, m=512, v=2, 5 repeats. Builds the
// schedule through the registry (generate, verify, insert sends/receives,
// verify again), simulates it, and prints the best and the mean wall time
// of each part. The target is under one second for the whole.
//
//===----------------------------------------------------------------------===//

#include "tessel/Schedule/Registry.h"
#include "tessel/Schedule/Simulator.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

using namespace tessel::pipeline;
using Clock = std::chrono::steady_clock;

static double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int main(int argc, char **argv) {
  std::string name = argc > 1 ? argv[1] : "interleaved-1f1b";
  ScheduleOptions opts;
  opts.ranks = argc > 2 ? std::atoi(argv[2]) : 64;
  opts.microbatches = argc > 3 ? std::atoi(argv[3]) : 512;
  opts.chunks = argc > 4 ? std::atoi(argv[4]) : 2;
  int repeats = argc > 5 ? std::max(1, std::atoi(argv[5])) : 5;

  double bestBuild = 1e30, bestSim = 1e30, bestTotal = 1e30, sumTotal = 0;
  size_t actions = 0;
  double bubble = 0;
  for (int i = 0; i < repeats; ++i) {
    Clock::time_point t0 = Clock::now();
    llvm::Expected<Schedule> s =
        ScheduleRegistry::getGlobal().build(name, opts);
    if (!s) {
      llvm::errs() << "schedule_bench: error: " << llvm::toString(s.takeError())
                   << '\n';
      return 1;
    }
    double buildTime = secondsSince(t0);
    Clock::time_point t1 = Clock::now();
    llvm::Expected<SimulationResult> sim = simulate(*s, ScheduleCosts());
    if (!sim) {
      llvm::errs() << "schedule_bench: error: "
                   << llvm::toString(sim.takeError()) << '\n';
      return 1;
    }
    double simTime = secondsSince(t1);
    double total = secondsSince(t0);
    bestBuild = std::min(bestBuild, buildTime);
    bestSim = std::min(bestSim, simTime);
    bestTotal = std::min(bestTotal, total);
    sumTotal += total;
    actions = s->size();
    bubble = sim->meanBubbleFraction;
  }
  llvm::outs() << "schedule: " << name << " p=" << opts.ranks
               << " m=" << opts.microbatches << " v=" << opts.chunks << '\n'
               << "actions: " << actions << '\n'
               << "bubble_fraction: " << llvm::format("%.4f", bubble) << '\n'
               << "generate+verify: "
               << llvm::format("%.1f ms", bestBuild * 1e3) << " (best of "
               << repeats << ")\n"
               << "simulate: " << llvm::format("%.1f ms", bestSim * 1e3) << '\n'
               << "total: " << llvm::format("%.1f ms", bestTotal * 1e3)
               << " best, " << llvm::format("%.1f ms", sumTotal / repeats * 1e3)
               << " mean\n";
  return 0;
}
