//===- Transformer.cpp - a GPT's training step at scale -------------------===//

#include "tessel/Cost/Transformer.h"

#include "tessel/Schedule/Generators.h"
#include "tessel/Schedule/Simulator.h"

#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <cmath>

using namespace llvm;

namespace tessel::cost {

double GptShape::getNumParameters() const {
  double h = double(hidden);
  return double(layers) * (12.0 * h * h + 13.0 * h) +
         double(vocab) * h + double(seqLength) * h + 2.0 * h;
}

Error GptShape::validate() const {
  for (auto [name, value] : {std::pair<const char *, int64_t>{"layers", layers},
                             {"hidden", hidden},
                             {"heads", heads},
                             {"seq_length", seqLength},
                             {"vocab", vocab}})
    if (value < 1)
      return createStringError(Twine("GPT shape: ") + name + " is " +
                               Twine(value) + "; it must be >= 1");
  if (hidden % heads != 0)
    return createStringError("GPT shape: heads (" + Twine(heads) +
                             ") must divide hidden (" + Twine(hidden) + ")");
  return Error::success();
}

std::string ParallelConfig::str() const {
  std::string s = "tp=" + std::to_string(tp) + " pp=" + std::to_string(pp) +
                  " dp=" + std::to_string(dp) +
                  " mb=" + std::to_string(microbatch);
  if (chunks > 1)
    s += " v=" + std::to_string(chunks);
  if (recompute)
    s += " recompute";
  if (distributedOptimizer)
    s += " zero1";
  return s;
}

double GemmShape::getBytes() const {
  double a = double(m) * double(k), b = double(k) * double(n),
         c = double(m) * double(n);
  return 2.0 * (a + b + c) * double(batch);
}

std::vector<GemmShape> getLayerForwardGemms(const GptShape &shape,
                                            int64_t microbatch, int64_t tp) {
  const int64_t tokens = microbatch * shape.seqLength;
  const int64_t h = shape.hidden, s = shape.seqLength;
  const int64_t headDim = h / shape.heads;
  const int64_t localHeads = shape.heads / tp;
  return {
      {tokens, 3 * h / tp, h, 1},                  // QKV (column parallel)
      {s, s, headDim, microbatch * localHeads},    // scores Q K^T
      {s, headDim, s, microbatch * localHeads},    // probabilities x V
      {tokens, h, h / tp, 1},                      // output (row parallel)
      {tokens, 4 * h / tp, h, 1},                  // MLP up (column)
      {tokens, h, 4 * h / tp, 1},                  // MLP down (row)
  };
}

std::pair<GemmShape, GemmShape> getBackwardGemms(const GemmShape &f) {
  // dA[m x k] = dC[m x n] B^T[n x k]; dB[k x n] = A^T[k x m] dC[m x n].
  return {{f.m, f.k, f.n, f.batch}, {f.k, f.n, f.m, f.batch}};
}

double getGemmTime(const DeviceSpec &device, const GemmShape &gemm) {
  return device.getOpTime(WorkClass::Matmul, Precision::BF16, gemm.getFlops(),
                          gemm.getBytes(),
                          double(std::min({gemm.m, gemm.n, gemm.k})));
}

double getPaperStepFlops(const GptShape &shape, int64_t globalBatch) {
  const double B = double(globalBatch), s = double(shape.seqLength),
               l = double(shape.layers), h = double(shape.hidden),
               V = double(shape.vocab);
  return 96.0 * B * s * l * h * h *
         (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
}

namespace {

/// Seconds of one piece of work, split into compute and communication on
/// the critical path.
struct Cost {
  double compute = 0;
  double comm = 0;
  double total() const { return compute + comm; }
  Cost &operator+=(const Cost &o) {
    compute += o.compute;
    comm += o.comm;
    return *this;
  }
};

Cost operator*(double f, Cost c) { return {f * c.compute, f * c.comm}; }

/// The link a collective over a group of `size` members `stride` ranks
/// apart runs at. Inside a node: the node's link. Across nodes, NCCL runs
/// one ring channel per NIC, so a group with k members in each node moves
/// k NICs' worth per node: k x the per-device inter-node bandwidth, at
/// most the node's own link.
LinkSpec getGroupCollectiveLink(const ClusterSpec &c, int64_t size,
                                int64_t stride) {
  LinkSpec link = c.getGroupLink(size, stride);
  if ((size - 1) * stride + 1 <= c.devicesPerNode)
    return link;
  int64_t perNode =
      stride < c.devicesPerNode ? std::min(size, c.devicesPerNode / stride) : 1;
  link.bandwidth = std::min(double(std::max<int64_t>(perNode, 1)) *
                                c.interNode.bandwidth,
                            c.intraNode.bandwidth);
  return link;
}

/// Everything predictTransformer and boundTransformer share: the per-stage
/// costs and the per-rank memory, before the simulator.
struct StepModel {
  int64_t microbatches = 0;
  int64_t numStages = 0;
  /// Per virtual stage: forward, backward (with recomputation), and their
  /// communication parts; layers per stage.
  std::vector<Cost> forward, backward;
  std::vector<int64_t> stageLayers;
  /// Seconds one p2p message takes (0 without pipelining).
  double p2pTime = 0;
  /// Per step, outside the pipeline: dp gradient sync, embedding sync,
  /// optimizer step.
  double dpTime = 0, embeddingSyncTime = 0, optimizerTime = 0;
  /// Per pipeline rank: parameters held; activation bytes one microbatch
  /// in flight holds (per chunk, the largest), plus what one microbatch's
  /// backward needs at once.
  std::vector<double> rankParameters, rankActivationPerMicrobatch,
      rankActivationWorking;
};

Expected<StepModel> buildStepModel(const GptShape &shape, int64_t globalBatch,
                                   const ParallelConfig &c,
                                   const ClusterSpec &cluster,
                                   const TransformerModelOptions &options) {
  if (Error e = shape.validate())
    return std::move(e);
  auto fail = [&](const Twine &msg) -> Error {
    return createStringError("configuration " + c.str() + ": " + msg);
  };
  for (auto [name, value] : {std::pair<const char *, int64_t>{"tp", c.tp},
                             {"pp", c.pp},
                             {"dp", c.dp},
                             {"microbatch", c.microbatch},
                             {"chunks", c.chunks}})
    if (value < 1)
      return fail(Twine(name) + " must be >= 1");
  if (globalBatch < 1)
    return fail("the global batch must be >= 1");
  if (c.getNumDevices() > cluster.getNumDevices())
    return fail("needs " + Twine(c.getNumDevices()) + " devices; cluster '" +
                cluster.name + "' has " + Twine(cluster.getNumDevices()));
  if (shape.heads % c.tp != 0)
    return fail("tp must divide the heads (" + Twine(shape.heads) + ")");
  if (globalBatch % (c.dp * c.microbatch) != 0)
    return fail("dp x microbatch must divide the global batch (" +
                Twine(globalBatch) + ")");
  const int64_t S = c.pp * c.chunks;
  if (S > shape.layers)
    return fail("pp x chunks (" + Twine(S) + ") exceeds the layers (" +
                Twine(shape.layers) + ")");
  StepModel m;
  m.microbatches = globalBatch / (c.dp * c.microbatch);
  if (c.chunks > 1 && m.microbatches % c.pp != 0)
    return fail("interleaving needs the microbatches (" +
                Twine(m.microbatches) + ") to be a multiple of pp");
  m.numStages = S;

  const DeviceSpec &dev = cluster.device;
  const double t = double(c.tp), b = double(c.microbatch);
  const double s = double(shape.seqLength), h = double(shape.hidden),
               a = double(shape.heads), V = double(shape.vocab);
  const double x = b * s * h;                // a layer's activation elements
  const double attention = b * (a / t) * s * s; // attention-score elements
  const double bw = dev.memoryBandwidth;
  const LinkSpec tpLink = cluster.getGroupLink(c.tp, 1);
  auto allReduce = [&](double bytes) {
    return getCollectiveTime(Collective::AllReduce, bytes, c.tp, tpLink);
  };

  // One layer. GEMMs: the six forward ones, their two backward ones each.
  Cost layerForward, layerBackward;
  for (const GemmShape &g : getLayerForwardGemms(shape, c.microbatch, c.tp)) {
    layerForward.compute += getGemmTime(dev, g);
    auto [dInput, dWeight] = getBackwardGemms(g);
    layerBackward.compute +=
        getGemmTime(dev, dInput) + getGemmTime(dev, dWeight);
  }
  // Elementwise kernels (bf16 activations, 1-byte dropout masks), bytes
  // read + written in the forward: layer norms 2 x 4x, bias-dropout-adds
  // 2 x 7x (x, bias and residual read, output and mask written), the
  // context's permute 4x/t, bias-GeLU 16x/t, scale-mask-softmax 4A,
  // attention dropout 5A: 22x + 20x/t + 9A over 9 kernels. A backward
  // kernel reads the output gradient and the saved input and writes the
  // input gradient: twice the forward's traffic, twice the kernels.
  const double elementwiseBytes = 22.0 * x + 20.0 * x / t + 9.0 * attention;
  layerForward.compute += elementwiseBytes / bw + 9.0 * dev.opOverhead;
  layerBackward.compute += 2.0 * elementwiseBytes / bw + 18.0 * dev.opOverhead;
  // tp: the attention and MLP outputs all-reduced forward, their inputs'
  // gradients backward (f and g of Megatron-LM), activations in bf16.
  layerForward.comm += 2.0 * allReduce(2.0 * x);
  layerBackward.comm += 2.0 * allReduce(2.0 * x);
  if (c.recompute)
    layerBackward += layerForward;

  // Embedding (first stage): gather and position add, 3 passes over x;
  // backward scatters the gradient into the table. LM head (last stage):
  // final layer norm, the logits GEMM over the vocab shard and the
  // vocab-parallel cross entropy in fp32 (logits cast, max, sum of
  // exponentials, softmax written: ~20 bytes per logit forward, 12
  // backward; three small all-reduces over tp).
  Cost embedForward{3.0 * 2.0 * x / bw + 2.0 * dev.opOverhead, 0};
  Cost embedBackward{3.0 * 2.0 * x / bw + 2.0 * dev.opOverhead, 0};
  const double logits = b * s * V / t;
  GemmShape head{c.microbatch * shape.seqLength, shape.vocab / c.tp,
                 shape.hidden, 1};
  auto [headInput, headWeight] = getBackwardGemms(head);
  Cost headForward{getGemmTime(dev, head) + 4.0 * x / bw +
                       20.0 * logits / bw + 6.0 * dev.opOverhead,
                   3.0 * allReduce(4.0 * b * s)};
  Cost headBackward{getGemmTime(dev, headInput) +
                        getGemmTime(dev, headWeight) + 8.0 * x / bw +
                        12.0 * logits / bw + 4.0 * dev.opOverhead,
                    allReduce(2.0 * x)};

  // Stages: L / S layers each, the first L % S stages one more.
  m.forward.resize(S);
  m.backward.resize(S);
  m.stageLayers.resize(S);
  for (int64_t i = 0; i < S; ++i) {
    int64_t n = shape.layers / S + (i < shape.layers % S ? 1 : 0);
    m.stageLayers[i] = n;
    m.forward[i] = double(n) * layerForward;
    m.backward[i] = double(n) * layerBackward;
  }
  m.forward[0] += embedForward;
  m.backward[0] += embedBackward;
  m.forward[S - 1] += headForward;
  m.backward[S - 1] += headBackward;

  // pp: an activation (forward) or its gradient (backward), 2x bytes; with
  // tp, each tp rank sends its 1/t and the receivers all-gather over the tp
  // link (Megatron-LM's scatter/gather). Pipeline ranks are t x dp apart.
  const LinkSpec ppLink = cluster.getGroupLink(c.pp, c.tp * c.dp);
  if (c.pp > 1) {
    m.p2pTime = ppLink.getTransferTime(2.0 * x / t);
    if (c.tp > 1)
      m.p2pTime += getCollectiveTime(Collective::AllGather, 2.0 * x, c.tp,
                                     tpLink);
  }

  // Parameters per pipeline rank (its stages' layers; the embedding on the
  // first rank, the final norm and, with pp, the embedding's tied copy on
  // the last).
  const double layerParams = (12.0 * h * h + 4.0 * h) / t + 9.0 * h;
  m.rankParameters.assign(c.pp, 0.0);
  for (int64_t i = 0; i < S; ++i)
    m.rankParameters[i % c.pp] += double(m.stageLayers[i]) * layerParams;
  m.rankParameters[0] += V * h / t + s * h;
  m.rankParameters[(S - 1) % c.pp] += 2.0 * h;
  if (c.pp > 1)
    m.rankParameters[(S - 1) % c.pp] += V * h / t;

  // dp: the gradients (bf16) all-reduced, or reduce-scattered and the
  // parameters all-gathered under ZeRO-1 (the same bytes); dp ranks are t
  // apart. The busiest rank's sync ends the step.
  const double maxParams =
      *std::max_element(m.rankParameters.begin(), m.rankParameters.end());
  const LinkSpec dpLink = getGroupCollectiveLink(cluster, c.dp, c.tp);
  m.dpTime = getCollectiveTime(Collective::AllReduce, 2.0 * maxParams, c.dp,
                               dpLink);
  // The tied embedding's gradient, summed between first and last stage.
  if (c.pp > 1)
    m.embeddingSyncTime =
        getCollectiveTime(Collective::AllReduce, 2.0 * V * h / t, 2, ppLink);
  // Adam: fp32 master weight, moments read and written, bf16 gradient read
  // and bf16 weight written: 30 bytes per parameter it updates.
  const double updated =
      c.distributedOptimizer ? maxParams / double(c.dp) : maxParams;
  m.optimizerTime = 30.0 * updated / bw + 4.0 * dev.opOverhead;

  // Activations (Korthikanti et al. 2022, tp without sequence parallelism):
  // s b h (10 + 24/t + 5 a s / (h t)) bytes per layer per microbatch; with
  // full recomputation only the layer input (2 s b h) is kept, and the
  // layer being recomputed holds its full set once.
  const double layerActivations =
      s * b * h * (10.0 + 24.0 / t + 5.0 * a * s / (h * t));
  const double kept = c.recompute ? 2.0 * s * b * h : layerActivations;
  m.rankActivationPerMicrobatch.assign(c.pp, 0.0);
  m.rankActivationWorking.assign(c.pp, c.recompute ? layerActivations : 0.0);
  for (int64_t i = 0; i < S; ++i) {
    double &perMb = m.rankActivationPerMicrobatch[i % c.pp];
    perMb = std::max(perMb, double(m.stageLayers[i]) * kept);
  }
  // The last stage's fp32 logits and their gradient.
  m.rankActivationWorking[(S - 1) % c.pp] += 8.0 * logits;
  return m;
}

/// Weights, gradients and optimizer state of pipeline rank `r`.
void getStateBytes(const StepModel &m, int64_t r, const ParallelConfig &c,
                   const TransformerModelOptions &o, double &weights,
                   double &optimizer) {
  weights = m.rankParameters[r] * o.weightAndGradBytes;
  optimizer = m.rankParameters[r] * o.optimizerStateBytes /
              (c.distributedOptimizer ? double(c.dp) : 1.0);
}

/// The busy time and its communication part of pipeline rank `r`.
Cost getRankBusy(const StepModel &m, int64_t r, int64_t pp) {
  Cost busy;
  for (int64_t i = r; i < m.numStages; i += pp) {
    busy += m.forward[i];
    busy += m.backward[i];
  }
  return double(m.microbatches) * busy;
}

} // namespace

Expected<TransformerBound>
boundTransformer(const GptShape &shape, int64_t globalBatch,
                 const ParallelConfig &c, const ClusterSpec &cluster,
                 const TransformerModelOptions &options) {
  Expected<StepModel> m = buildStepModel(shape, globalBatch, c, cluster,
                                         options);
  if (!m)
    return m.takeError();
  TransformerBound bound;
  double pipeline = 0;
  for (int64_t r = 0; r < c.pp; ++r) {
    pipeline = std::max(pipeline, getRankBusy(*m, r, c.pp).total());
    double weights, optimizer;
    getStateBytes(*m, r, c, options, weights, optimizer);
    double inFlight = double(std::min(c.pp - r, m->microbatches));
    bound.memoryBytes =
        std::max(bound.memoryBytes,
                 weights + optimizer +
                     inFlight * m->rankActivationPerMicrobatch[r] +
                     m->rankActivationWorking[r]);
  }
  // The last rank idles until the first microbatch has crossed the others.
  double warmUp = 0;
  for (int64_t i = 0; i + 1 < c.pp; ++i)
    warmUp += m->forward[i].total();
  pipeline = std::max(pipeline,
                      getRankBusy(*m, c.pp - 1, c.pp).total() + warmUp);
  bound.stepTime =
      pipeline + m->dpTime + m->embeddingSyncTime + m->optimizerTime;
  return bound;
}

Expected<TransformerPrediction>
predictTransformer(const GptShape &shape, int64_t globalBatch,
                   const ParallelConfig &c, const ClusterSpec &cluster,
                   const TransformerModelOptions &options) {
  Expected<StepModel> m = buildStepModel(shape, globalBatch, c, cluster,
                                         options);
  if (!m)
    return m.takeError();

  // The pipeline: the schedule tesselc simulates, with these stage costs.
  pipeline::ScheduleOptions so;
  so.ranks = int32_t(c.pp);
  so.microbatches = int32_t(m->microbatches);
  so.chunks = int32_t(c.chunks);
  Expected<pipeline::Schedule> schedule =
      c.chunks > 1 ? pipeline::generateInterleavedOneFOneB(so)
                   : pipeline::generateOneFOneB(so);
  if (!schedule)
    return createStringError("configuration " + c.str() + ": " +
                             toString(schedule.takeError()));
  pipeline::ScheduleCosts costs;
  costs.p2pLatency = m->p2pTime;
  for (int64_t i = 0; i < m->numStages; ++i) {
    costs.stageForward.push_back(m->forward[i].total());
    costs.stageBackwardInput.push_back(m->backward[i].total());
    costs.stageBackwardWeight.push_back(0.0);
  }
  costs.forward = costs.stageForward[0];
  costs.backwardInput = costs.stageBackwardInput[0];
  costs.backwardWeight = 0.0;
  Expected<pipeline::SimulationResult> sim =
      pipeline::simulate(*schedule, costs);
  if (!sim)
    return createStringError("configuration " + c.str() + ": " +
                             toString(sim.takeError()));

  TransformerPrediction p;
  p.microbatches = m->microbatches;
  // The busiest rank decides what is compute, communication and bubble.
  Cost busiest;
  for (int64_t r = 0; r < c.pp; ++r) {
    Cost busy = getRankBusy(*m, r, c.pp);
    if (busy.total() > busiest.total())
      busiest = busy;
    double weights, optimizer;
    getStateBytes(*m, r, c, options, weights, optimizer);
    double activations =
        double(sim->ranks[r].peakActivations) *
            m->rankActivationPerMicrobatch[r] +
        m->rankActivationWorking[r];
    if (weights + optimizer + activations > p.memoryBytes) {
      p.memoryBytes = weights + optimizer + activations;
      p.weightBytes = weights;
      p.optimizerBytes = optimizer;
      p.activationBytes = activations;
    }
  }
  p.computeTime = busiest.compute + m->optimizerTime;
  p.exposedCommTime = busiest.comm + m->dpTime + m->embeddingSyncTime;
  p.bubbleTime = std::max(0.0, sim->stepTime - busiest.total());
  p.stepTime = p.computeTime + p.exposedCommTime + p.bubbleTime;
  p.tflopsPerDevice = getPaperStepFlops(shape, globalBatch) / p.stepTime /
                      double(c.getNumDevices()) / 1e12;
  return p;
}

} // namespace tessel::cost
