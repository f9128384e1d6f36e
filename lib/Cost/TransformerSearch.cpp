//===- TransformerSearch.cpp - the fastest GPT plan for a cluster ---------===//

#include "tessel/Cost/TransformerSearch.h"

#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <cstdio>

using namespace llvm;

namespace tessel::cost {

namespace {

std::vector<ParallelConfig> enumerate(const GptShape &shape,
                                      int64_t globalBatch, int64_t devices,
                                      int64_t devicesPerNode,
                                      int64_t maxMicrobatch) {
  std::vector<ParallelConfig> out;
  const int64_t L = shape.layers;
  for (int64_t tp = 1; tp <= devicesPerNode && tp <= shape.heads; tp *= 2) {
    if (shape.heads % tp != 0 || devices % tp != 0)
      continue;
    for (int64_t pp = 1; pp <= L && pp <= devices / tp; ++pp) {
      if ((devices / tp) % pp != 0)
        continue;
      const int64_t dp = devices / (tp * pp);
      if (globalBatch % dp != 0)
        continue;
      const int64_t perReplica = globalBatch / dp;
      for (int64_t mb = 1; mb <= perReplica && mb <= maxMicrobatch; ++mb) {
        if (perReplica % mb != 0)
          continue;
        const int64_t m = perReplica / mb;
        std::vector<int64_t> chunks = {1};
        if (pp > 1 && m % pp == 0 && L % pp == 0)
          for (int64_t v = 2; v <= L / pp; ++v)
            if ((L / pp) % v == 0)
              chunks.push_back(v);
        for (int64_t v : chunks)
          for (bool recompute : {false, true})
            for (bool zero : {false, true}) {
              if (zero && dp == 1)
                continue;
              ParallelConfig c;
              c.tp = tp;
              c.pp = pp;
              c.dp = dp;
              c.microbatch = mb;
              c.chunks = v;
              c.recompute = recompute;
              c.distributedOptimizer = zero;
              out.push_back(c);
            }
      }
    }
  }
  return out;
}

std::string formatGiB(double bytes) {
  char buffer[32];
  snprintf(buffer, sizeof(buffer), "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  return buffer;
}

} // namespace

Expected<PlanSearchResult>
searchTransformerPlans(const GptShape &shape, int64_t globalBatch,
                       const ClusterSpec &cluster,
                       const PlanSearchOptions &options) {
  if (Error e = shape.validate())
    return std::move(e);
  if (Error e = cluster.validate())
    return std::move(e);
  if (globalBatch < 1)
    return createStringError("the global batch must be >= 1, got " +
                             Twine(globalBatch));
  const double limit = options.memoryLimit > 0 ? options.memoryLimit
                                               : cluster.device.memoryBytes;
  PlanSearchResult result;
  std::vector<ParallelConfig> configs =
      enumerate(shape, globalBatch, cluster.getNumDevices(),
                cluster.devicesPerNode, options.maxMicrobatch);
  result.enumerated = int64_t(configs.size());

  // Floors first: memory drops, time orders.
  std::vector<std::pair<double, size_t>> order;
  double smallest = 0;
  std::string smallestConfig;
  for (size_t i = 0; i < configs.size(); ++i) {
    Expected<TransformerBound> bound = boundTransformer(
        shape, globalBatch, configs[i], cluster, options.model);
    if (!bound) {
      consumeError(bound.takeError()); // does not divide: not a candidate
      continue;
    }
    if (smallestConfig.empty() || bound->memoryBytes < smallest) {
      smallest = bound->memoryBytes;
      smallestConfig = configs[i].str();
    }
    if (bound->memoryBytes > limit) {
      ++result.tooBig;
      continue;
    }
    order.emplace_back(bound->stepTime, i);
  }
  std::sort(order.begin(), order.end());

  std::vector<PlanCandidate> &best = result.best;
  for (size_t k = 0; k < order.size(); ++k) {
    if (best.size() >= options.keep &&
        order[k].first >= best.back().prediction.stepTime) {
      result.pruned += int64_t(order.size() - k);
      break;
    }
    const ParallelConfig &c = configs[order[k].second];
    Expected<TransformerPrediction> p =
        predictTransformer(shape, globalBatch, c, cluster, options.model);
    ++result.simulated;
    if (!p)
      return p.takeError();
    if (p->memoryBytes > limit) {
      ++result.tooBig;
      continue;
    }
    PlanCandidate candidate{c, *p};
    auto at = std::upper_bound(best.begin(), best.end(), candidate,
                               [](const PlanCandidate &a,
                                  const PlanCandidate &b) {
                                 return a.prediction.stepTime <
                                        b.prediction.stepTime;
                               });
    best.insert(at, candidate);
    if (best.size() > options.keep)
      best.pop_back();
  }
  if (best.empty()) {
    if (smallestConfig.empty())
      return createStringError(
          "no configuration of tp x pp x dp uses the " +
          Twine(cluster.getNumDevices()) +
          " devices of cluster '" + cluster.name + "' with global batch " +
          Twine(globalBatch));
    return createStringError("no configuration fits in " + formatGiB(limit) +
                             " per device; the smallest need found is " +
                             formatGiB(smallest) + ", for " + smallestConfig);
  }
  return result;
}

} // namespace tessel::cost
