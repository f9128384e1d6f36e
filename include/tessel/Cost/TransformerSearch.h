//===- TransformerSearch.h - the fastest GPT plan for a cluster -*- C++ -*-===//
//
// Enumerates the Megatron-LM configurations of a GPT on a cluster: tp
// (powers of two up to a node, dividing the heads), pp (dividing the
// devices left, up to the layers; stages may differ by one layer), dp (the
// rest, dividing the global batch), microbatch (dividing a replica's
// batch), interleaving v (dividing the layers per rank, with microbatches a
// multiple of pp), recomputation and ZeRO-1 on and off. It drops those
// whose memory floor exceeds the limit, orders the rest by their step-time
// floor (boundTransformer) and simulates them in that order until the
// floor of the next one cannot beat the `keep`-th best found: branch and
// bound, exact for the model.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COST_TRANSFORMERSEARCH_H
#define TESSEL_COST_TRANSFORMERSEARCH_H

#include "tessel/Cost/Transformer.h"

#include <vector>

namespace tessel::cost {

struct PlanSearchOptions {
  /// Bytes a device may hold; 0: the cluster's device memory.
  double memoryLimit = 0;
  /// How many of the best configurations to return.
  size_t keep = 5;
  /// Largest microbatch tried.
  int64_t maxMicrobatch = 64;
  TransformerModelOptions model;
};

struct PlanCandidate {
  ParallelConfig config;
  TransformerPrediction prediction;
};

struct PlanSearchResult {
  /// Fastest first.
  std::vector<PlanCandidate> best;
  /// Configurations enumerated; dropped for memory; dropped by the bound
  /// without simulating; simulated.
  int64_t enumerated = 0, tooBig = 0, pruned = 0, simulated = 0;
};

/// Searches the configurations of `shape` over `globalBatch` sequences on
/// all of `cluster`'s devices. Fails when none fits the memory limit,
/// naming the smallest need found and its configuration.
llvm::Expected<PlanSearchResult>
searchTransformerPlans(const GptShape &shape, int64_t globalBatch,
                       const ClusterSpec &cluster,
                       const PlanSearchOptions &options = {});

} // namespace tessel::cost

#endif // TESSEL_COST_TRANSFORMERSEARCH_H
