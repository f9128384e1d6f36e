//===- TransformerSearchTest.cpp - the fastest GPT plan for a cluster -----===//

#include "tessel/Cost/TransformerSearch.h"

#include <gtest/gtest.h>

#include <string>

using namespace tessel::cost;

namespace {

// The search is exact for the model: nothing it enumerates beats its
// winner. Checked against every configuration predicted one by one.
TEST(CostTransformerSearch, FindsTheBestByExhaustion) {
  GptShape gpt{16, 2048, 16, 1024, 32000};
  ClusterSpec cluster = *getBuiltinCluster("a100", 2);
  PlanSearchOptions options;
  options.keep = 3;
  auto found = searchTransformerPlans(gpt, 64, cluster, options);
  ASSERT_TRUE(bool(found)) << llvm::toString(found.takeError());
  ASSERT_EQ(found->best.size(), 3u);
  EXPECT_LE(found->best[0].prediction.stepTime,
            found->best[1].prediction.stepTime);
  EXPECT_LT(found->simulated, found->enumerated);
  double bestByHand = 1e30;
  int64_t tried = 0;
  for (int64_t tp : {1, 2, 4, 8})
    for (int64_t pp = 1; pp <= 16; ++pp)
      for (int64_t mb : {1, 2, 4, 8, 16, 32, 64})
        for (int64_t v : {1, 2, 4, 8})
          for (bool recompute : {false, true})
            for (bool zero : {false, true}) {
              if (16 % (tp * pp) != 0)
                continue;
              ParallelConfig c{tp, pp, 16 / (tp * pp), mb, v, recompute, zero};
              auto p = predictTransformer(gpt, 64, c, cluster);
              if (!p) {
                llvm::consumeError(p.takeError());
                continue;
              }
              ++tried;
              if (p->memoryBytes <= cluster.device.memoryBytes)
                bestByHand = std::min(bestByHand, p->stepTime);
            }
  EXPECT_GT(tried, 100);
  EXPECT_DOUBLE_EQ(found->best[0].prediction.stepTime, bestByHand);
}

TEST(CostTransformerSearch, RespectsTheMemoryLimit) {
  GptShape gpt{24, 2304, 24, 2048, 51200};
  ClusterSpec cluster = *getBuiltinCluster("a100", 4);
  PlanSearchOptions options;
  options.memoryLimit = 20e9;
  auto found = searchTransformerPlans(gpt, 512, cluster, options);
  ASSERT_TRUE(bool(found)) << llvm::toString(found.takeError());
  EXPECT_GT(found->tooBig, 0);
  for (const PlanCandidate &c : found->best)
    EXPECT_LE(c.prediction.memoryBytes, 20e9) << c.config.str();
}

TEST(CostTransformerSearch, SaysWhenNothingFits) {
  GptShape gpt{96, 12288, 96, 2048, 51200}; // GPT-3 175B on one node
  ClusterSpec cluster = *getBuiltinCluster("h100", 1);
  auto found = searchTransformerPlans(gpt, 64, cluster);
  ASSERT_FALSE(bool(found));
  std::string msg = llvm::toString(found.takeError());
  EXPECT_NE(msg.find("no configuration fits in 80.0 GiB per device; the "
                     "smallest need found is "),
            std::string::npos)
      << msg;
  // 16 bytes per parameter over 8 GPUs, whatever the split: ~326 GiB.
  EXPECT_NE(msg.find("GiB, for tp="), std::string::npos) << msg;
  double need = std::stod(msg.substr(msg.find("found is ") + 9));
  EXPECT_GT(need, 16 * gpt.getNumParameters() / 8 / (1024.0 * 1024 * 1024));
}

TEST(CostTransformerSearch, SaysWhenNoMeshUsesTheDevices) {
  GptShape gpt{4, 64, 4, 16, 100};
  ClusterSpec cluster = *getBuiltinCluster("cpu", 1); // 64 devices
  auto found = searchTransformerPlans(gpt, 3, cluster);
  ASSERT_FALSE(bool(found));
  EXPECT_NE(llvm::toString(found.takeError())
                .find("no configuration of tp x pp x dp uses the 64 devices "
                      "of cluster 'cpu' with global batch 3"),
            std::string::npos);
}

} // namespace
