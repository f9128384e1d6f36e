//===- TransformerTest.cpp - a GPT's training step at scale ---------------===//

#include "tessel/Cost/Transformer.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tessel::cost;

namespace {

double sumFlops(const std::vector<GemmShape> &gemms) {
  double total = 0;
  for (const GemmShape &g : gemms)
    total += g.getFlops();
  return total;
}

// examples/gpt2_block_megatron.mlir: batch 2, 128 tokens, d 768, 12 heads.
// dialects/tessel/OpCost.h counts a matmul as 2 x (result elements) x (the
// lhs's last dim); the six matmuls of its block, by hand:
TEST(CostTransformer, LayerGemmFlopsAreOpCostsOnTheGpt2Block) {
  const double qkv = 2.0 * (2 * 128 * 2304) * 768;   // %qkv0
  const double scores = 2.0 * (2 * 12 * 128 * 128) * 64; // %s0
  const double context = 2.0 * (2 * 12 * 128 * 64) * 128; // %o0
  const double proj = 2.0 * (2 * 128 * 768) * 768;   // %a0
  const double fc = 2.0 * (2 * 128 * 3072) * 768;    // %f0
  const double down = 2.0 * (2 * 128 * 768) * 3072;  // %m0
  const double block = qkv + scores + context + proj + fc + down;
  GptShape gpt2{12, 768, 12, 128, 50257};
  EXPECT_DOUBLE_EQ(sumFlops(getLayerForwardGemms(gpt2, 2, 1)), block);
  // The file's plan shards the block over tp = 4: each rank a quarter.
  EXPECT_DOUBLE_EQ(sumFlops(getLayerForwardGemms(gpt2, 2, 4)), block / 4);
  // The LM head (%logits): 2 x (2 x 128 x 50257) x 768.
  GemmShape head{2 * 128, 50257, 768, 1};
  EXPECT_DOUBLE_EQ(head.getFlops(), 2.0 * (2 * 128 * 50257) * 768.0);
}

// Each backward GEMM does the forward's FLOPs; with recomputation a step
// is 4 forward passes of the layers and 3 of the LM head: the paper's
// 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
TEST(CostTransformer, StepGemmFlopsAreThePapersFormula) {
  GptShape gpt{80, 12288, 96, 2048, 51200}; // Table 1's 145.6B
  const int64_t batch = 2304, mb = 2;
  double layer = 0;
  for (const GemmShape &f : getLayerForwardGemms(gpt, mb, 1)) {
    auto [dIn, dW] = getBackwardGemms(f);
    EXPECT_DOUBLE_EQ(dIn.getFlops(), f.getFlops());
    EXPECT_DOUBLE_EQ(dW.getFlops(), f.getFlops());
    layer += 2 * f.getFlops() + dIn.getFlops() + dW.getFlops();
  }
  GemmShape head{mb * 2048, 51200, 12288, 1};
  double step = double(batch / mb) * (80 * layer + 3 * head.getFlops());
  const double B = batch, s = 2048, l = 80, h = 12288, V = 51200;
  double paper = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  EXPECT_NEAR(step / paper, 1.0, 1e-12);
  EXPECT_NEAR(getPaperStepFlops(gpt, batch) / paper, 1.0, 1e-12);
  // Table 1: 148 TFLOP/s on 1536 GPUs is 227.1 PFLOP/s aggregate.
  EXPECT_NEAR(148e12 * 1536 / 1e15, 227.1, 0.3);
}

TEST(CostTransformer, GemmTimeIsARooflineWithSaturation) {
  // The device's saturation curve, K0 = 128.
  DeviceSpec d{"d", 1e12, 100e12, 0.5, 0.5, 80e9, 1e12, 0, 128};
  // Large K: compute bound at 50 TFLOP/s x K / (K + 128).
  GemmShape big{4096, 4096, 4096 - 128, 1};
  double rate = 50e12 * (4096.0 - 128) / 4096.0;
  EXPECT_NEAR(getGemmTime(d, big), big.getFlops() / rate, 1e-12);
  // An attention-score GEMM with K = 64 moves s^2 outputs: memory bound
  // on a device whose rate is high enough.
  GemmShape scores{2048, 2048, 64, 16};
  DeviceSpec fast{"fast", 1e12, 1000e12, 0.5, 0.5, 80e9, 1e12, 0, 128};
  EXPECT_NEAR(getGemmTime(fast, scores),
              2.0 * 16 * (2048.0 * 64 * 2 + 2048.0 * 2048) / 1e12, 1e-12);
  // Saturation: the same FLOPs with a shorter K run slower.
  GemmShape shortK{8192, 4096, 1024, 1}, longK{2048, 4096, 4096, 1};
  EXPECT_GT(getGemmTime(d, shortK), getGemmTime(d, longK));
}

ClusterSpec a100(int64_t nodes) { return *getBuiltinCluster("a100", nodes); }

TEST(CostTransformer, StepTimeIsTheSumOfItsParts) {
  GptShape gpt{48, 8192, 64, 2048, 51200};
  ParallelConfig c;
  c.tp = 8;
  c.pp = 2;
  c.dp = 4;
  c.microbatch = 4;
  c.recompute = true;
  auto p = predictTransformer(gpt, 256, c, a100(8));
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  EXPECT_EQ(p->microbatches, 16);
  EXPECT_NEAR(p->stepTime,
              p->computeTime + p->exposedCommTime + p->bubbleTime, 1e-9);
  EXPECT_GT(p->bubbleTime, 0);
  EXPECT_GT(p->exposedCommTime, 0);
  EXPECT_NEAR(p->tflopsPerDevice,
              getPaperStepFlops(gpt, 256) / p->stepTime / 64 / 1e12, 1e-9);
  // Achieved TFLOP/s stay under the device's peak.
  EXPECT_LT(p->tflopsPerDevice, 312);
  EXPECT_NEAR(p->memoryBytes,
              p->weightBytes + p->optimizerBytes + p->activationBytes, 1);
}

TEST(CostTransformer, PipelineBubbleFollowsTheSchedule) {
  GptShape gpt{32, 4096, 32, 2048, 51200};
  ParallelConfig c;
  c.tp = 8;
  c.pp = 4;
  c.dp = 1;
  c.microbatch = 1;
  c.recompute = true;
  auto flat = predictTransformer(gpt, 8, {8, 1, 1, 1, 1, true, false},
                                 a100(1));
  ASSERT_TRUE(bool(flat)) << llvm::toString(flat.takeError());
  EXPECT_NEAR(flat->bubbleTime, 0, 1e-9);
  auto plain = predictTransformer(gpt, 8, c, a100(4));
  c.chunks = 2;
  auto interleaved = predictTransformer(gpt, 8, c, a100(4));
  ASSERT_TRUE(bool(plain) && bool(interleaved));
  // 1F1B with m = 8, p = 4: a bubble of about (p - 1) / m of the work;
  // interleaving 2 chunks halves it.
  double work = plain->computeTime + plain->exposedCommTime;
  EXPECT_NEAR(plain->bubbleTime / work, 3.0 / 8.0, 0.08);
  EXPECT_LT(interleaved->bubbleTime, 0.65 * plain->bubbleTime);
}

TEST(CostTransformer, MemoryFollowsRecomputationAndZero) {
  GptShape gpt{24, 2304, 24, 2048, 51200};
  ParallelConfig c{1, 1, 32, 16, 1, false, false};
  auto full = predictTransformer(gpt, 512, c, a100(4));
  c.recompute = true;
  auto recomputed = predictTransformer(gpt, 512, c, a100(4));
  c.distributedOptimizer = true;
  auto zero = predictTransformer(gpt, 512, c, a100(4));
  ASSERT_TRUE(bool(full) && bool(recomputed) && bool(zero));
  // Weights + grads: 4 bytes per parameter, Adam 12 (over dp with ZeRO-1).
  EXPECT_NEAR(full->weightBytes, 4 * gpt.getNumParameters(),
              1e-6 * full->weightBytes);
  EXPECT_NEAR(full->optimizerBytes, 12 * gpt.getNumParameters(),
              1e-6 * full->optimizerBytes);
  EXPECT_NEAR(zero->optimizerBytes, full->optimizerBytes / 32, 1);
  // Korthikanti et al.: s b h (34 + 5 a s / h) per layer without tp, kept
  // for the one microbatch in flight, plus the fp32 logits and gradient.
  const double s = 2048, b = 16, h = 2304, a = 24;
  double layer = s * b * h * (34 + 5 * a * s / h);
  EXPECT_NEAR(full->activationBytes, 24 * layer + 8 * s * b * 51200,
              1e-6 * full->activationBytes);
  // Recomputation keeps layer inputs only, plus one layer's set.
  EXPECT_NEAR(recomputed->activationBytes,
              24 * 2 * s * b * h + layer + 8 * s * b * 51200,
              1e-6 * recomputed->activationBytes);
  EXPECT_GT(recomputed->stepTime, full->stepTime);
}

TEST(CostTransformer, RefusesConfigurationsThatDoNotDivide) {
  GptShape gpt{24, 2304, 24, 2048, 51200};
  auto message = [&](ParallelConfig c, int64_t batch, int64_t nodes) {
    auto p = predictTransformer(gpt, batch, c, a100(nodes));
    return p ? std::string() : llvm::toString(p.takeError());
  };
  EXPECT_NE(message({16, 1, 1, 1, 1, false, false}, 8, 2)
                .find("tp must divide the heads (24)"),
            std::string::npos);
  EXPECT_NE(message({1, 1, 3, 2, 1, false, false}, 8, 1)
                .find("dp x microbatch must divide the global batch (8)"),
            std::string::npos);
  EXPECT_NE(message({8, 1, 4, 1, 1, false, false}, 8, 1)
                .find("needs 32 devices; cluster 'a100' has 8"),
            std::string::npos);
  EXPECT_NE(message({1, 4, 1, 1, 2, false, false}, 6, 1)
                .find("interleaving needs the microbatches (6)"),
            std::string::npos);
  EXPECT_NE(message({1, 25, 1, 1, 1, false, false}, 8, 4)
                .find("pp x chunks (25) exceeds the layers (24)"),
            std::string::npos);
  GptShape bad{24, 2304, 25, 2048, 51200};
  auto p = predictTransformer(bad, 8, {}, a100(1));
  ASSERT_FALSE(bool(p));
  EXPECT_NE(llvm::toString(p.takeError()).find("heads (25) must divide"),
            std::string::npos);
}

} // namespace
