//===- Transformer.h - a GPT's training step at scale -----------*- C++ -*-===//
//
// Predicts one training step of a GPT (Megatron-LM's layer: pre-LN
// attention and a 4h MLP, tied embedding) under tensor (tp), pipeline (pp)
// and data (dp) parallelism on a ClusterSpec, without the model: from its
// shape alone. docs/gpt-at-scale.md gives the equations; in short:
//
//  - every GEMM of a layer, forward and both backward GEMMs, by a roofline
//    (its FLOPs at the device's matmul rate against its bytes at memory
//    bandwidth), the rate scaled by the device's saturation curve d / (d +
//    D0) of the GEMM's smallest dimension (DeviceSpec::matmulSaturationDim);
//  - the elementwise kernels (layer norms, bias-GeLU, softmax, dropouts,
//    residual adds) by the bytes they move over memory bandwidth;
//  - tp's all-reduces (2 per layer forward, 2 backward, 2 more to recompute)
//    over the tp group's link; pp's activation and gradient messages
//    (scattered over tp, gathered over NVLink) over the pipeline's link;
//    dp's gradient all-reduce over the dp group's link;
//  - the per-stage costs played by the schedule simulator (1F1B or
//    interleaved 1F1B), which gives the step's pipeline time and bubble.
//
// Units: seconds, bytes, FLOPs.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COST_TRANSFORMER_H
#define TESSEL_COST_TRANSFORMER_H

#include "tessel/Cost/Cluster.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessel::cost {

/// A GPT's shape: `layers` transformer layers of width `hidden` with `heads`
/// attention heads, over sequences of `seqLength` tokens from `vocab`.
struct GptShape {
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t seqLength = 0;
  int64_t vocab = 0;

  /// Parameters: 12 h^2 + 13 h per layer, V h + s h embeddings, the final
  /// layer norm (the LM head is the tied embedding).
  double getNumParameters() const;
  /// Checks that every figure is >= 1 and heads divides hidden.
  llvm::Error validate() const;
};

/// How a step is parallelized (Megatron-LM's terms).
struct ParallelConfig {
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t dp = 1;
  /// Sequences per microbatch.
  int64_t microbatch = 1;
  /// Model chunks per pipeline rank (v; 1: plain 1F1B).
  int64_t chunks = 1;
  /// Full activation recomputation: each layer's forward runs again in the
  /// backward; only layer inputs are kept.
  bool recompute = false;
  /// ZeRO-1 (Megatron's distributed optimizer): optimizer state split over
  /// dp; gradients reduce-scattered and parameters all-gathered.
  bool distributedOptimizer = false;

  int64_t getNumDevices() const { return tp * pp * dp; }
  /// "tp=8 pp=4 dp=32 mb=2 v=3 recompute zero1".
  std::string str() const;
};

/// Constants of the model that are not figures of the cluster.
struct TransformerModelOptions {
  /// Bytes per parameter besides the optimizer state: a bf16 weight and its
  /// bf16 gradient.
  double weightAndGradBytes = 4;
  /// Adam's fp32 master weight, first and second moments.
  double optimizerStateBytes = 12;
};

/// One GEMM (`batch` independent ones): C[m x n] = A[m x k] B[k x n].
struct GemmShape {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  double getFlops() const {
    return 2.0 * double(m) * double(n) * double(k) * double(batch);
  }
  /// Bytes of A, B and C in bf16.
  double getBytes() const;
};

/// The forward GEMMs of one transformer layer on one tp rank, for a
/// microbatch of `microbatch` sequences: QKV, the attention scores Q K^T,
/// probabilities x V, the attention output projection, MLP up, MLP down.
std::vector<GemmShape> getLayerForwardGemms(const GptShape &shape,
                                            int64_t microbatch, int64_t tp);

/// The two backward GEMMs of `forward` (input gradient, weight gradient).
std::pair<GemmShape, GemmShape> getBackwardGemms(const GemmShape &forward);

/// Seconds for `gemm` in bf16 on `device`: max(FLOPs / (peak x
/// matmulEfficiency x d / (d + D0)), bytes / memory bandwidth) + the
/// device's per-op overhead; d the GEMM's smallest dimension, D0 the
/// device's matmulSaturationDim (DeviceSpec::getOpTime).
double getGemmTime(const DeviceSpec &device, const GemmShape &gemm);

/// Narayanan et al. (SC'21), eq. (3): the FLOPs of one training step with
/// full activation recomputation,
///   96 B s l h^2 (1 + s / (6 h) + V / (16 l h)).
/// The paper's TFLOP/s count this whatever a plan recomputes, so the
/// figures of two plans compare their step times.
double getPaperStepFlops(const GptShape &shape, int64_t globalBatch);

struct TransformerPrediction {
  /// One training step, and its parts: compute (GEMMs, elementwise work,
  /// the optimizer step), communication on the critical path (tp's
  /// all-reduces, dp's gradient sync, the embedding sync between first
  /// and last stage) and the pipeline bubble (idle time of the busiest
  /// rank, waits for p2p messages included). They add up to stepTime.
  double stepTime = 0;
  double computeTime = 0;
  double exposedCommTime = 0;
  double bubbleTime = 0;
  /// Microbatches per step per pipeline (global batch / (dp x microbatch)).
  int64_t microbatches = 0;
  /// The busiest pipeline rank's peak memory, and its parts: weights and
  /// gradients, optimizer state, activations (as the simulator's peak
  /// microbatches in flight hold them).
  double memoryBytes = 0;
  double weightBytes = 0;
  double optimizerBytes = 0;
  double activationBytes = 0;
  /// The paper's FLOPs (getPaperStepFlops) / step time / devices, in
  /// TFLOP/s.
  double tflopsPerDevice = 0;
};

/// Predicts one step of `shape` over `globalBatch` sequences with `config`
/// on `cluster`. Fails, naming the figure, when the configuration does not
/// divide the model or the batch, or needs more devices than the cluster
/// has.
llvm::Expected<TransformerPrediction>
predictTransformer(const GptShape &shape, int64_t globalBatch,
                   const ParallelConfig &config, const ClusterSpec &cluster,
                   const TransformerModelOptions &options = {});

/// What predictTransformer cannot beat, without running the simulator: the
/// busiest rank's compute and tp communication, the dp and embedding syncs
/// and the optimizer step (no bubble); memory with the fewest microbatches
/// in flight 1F1B allows (p - r on rank r). A search drops a configuration
/// whose bound already loses.
struct TransformerBound {
  double stepTime = 0;
  double memoryBytes = 0;
};
llvm::Expected<TransformerBound>
boundTransformer(const GptShape &shape, int64_t globalBatch,
                 const ParallelConfig &config, const ClusterSpec &cluster,
                 const TransformerModelOptions &options = {});

} // namespace tessel::cost

#endif // TESSEL_COST_TRANSFORMER_H
