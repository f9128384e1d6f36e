//===- ClusterTest.cpp - devices, links and collective times --------------===//

#include "tessel/Cost/Cluster.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace tessel::cost;

namespace {

TEST(CostCluster, RingAllReduceIsTwoNMinusOneStepsOfAChunk) {
  LinkSpec link{LinkKind::NVLink, 1e-5, 1e9};
  // 4 ranks, 4 MB: 6 steps of (10 us + 1 MB / 1 GB/s = 1 ms).
  EXPECT_NEAR(getCollectiveTime(Collective::AllReduce, 4e6, 4, link),
              6 * (1e-5 + 1e-3), 1e-12);
  EXPECT_NEAR(getCollectiveTime(Collective::AllGather, 4e6, 4, link),
              3 * (1e-5 + 1e-3), 1e-12);
  EXPECT_NEAR(getCollectiveTime(Collective::ReduceScatter, 4e6, 4, link),
              3 * (1e-5 + 1e-3), 1e-12);
  // Tree: 2 log2(8) = 6 latencies, 2 x bytes / bandwidth.
  EXPECT_NEAR(getCollectiveTime(Collective::AllReduce, 4e6, 8, link,
                                CollectiveAlgorithm::Tree),
              6e-5 + 8e-3, 1e-12);
  EXPECT_NEAR(getCollectiveTime(Collective::SendRecv, 4e6, 2, link),
              1e-5 + 4e-3, 1e-12);
}

TEST(CostCluster, SharedMemoryCollectivesMeetOnceOrTwiceAtAnySize) {
  LinkSpec shm{LinkKind::SharedMemory, 1e-5, 1e9};
  // 4 ranks, 4 MB, worked by hand: all_reduce two sync points and 4 MB at
  // 1 GB/s; all_gather one and (4 + 1) MB / 3 GB/s; reduce_scatter one and
  // (8 + 1) MB / 5 GB/s; broadcast one and 4 MB.
  EXPECT_NEAR(getCollectiveTime(Collective::AllReduce, 4e6, 4, shm),
              2e-5 + 4e-3, 1e-12);
  EXPECT_NEAR(getCollectiveTime(Collective::AllGather, 4e6, 4, shm),
              1e-5 + 5e6 / 3e9, 1e-12);
  EXPECT_NEAR(getCollectiveTime(Collective::ReduceScatter, 4e6, 4, shm),
              1e-5 + 9e6 / 5e9, 1e-12);
  EXPECT_NEAR(getCollectiveTime(Collective::Broadcast, 4e6, 4, shm),
              1e-5 + 4e-3, 1e-12);
  // On 8 ranks the all_reduce costs the same: no ring steps.
  EXPECT_NEAR(getCollectiveTime(Collective::AllReduce, 4e6, 8, shm),
              2e-5 + 4e-3, 1e-12);
  // On 2 ranks each equals the ring (one calibration serves both).
  LinkSpec ring = shm;
  ring.kind = LinkKind::Tcp;
  for (Collective c : {Collective::AllReduce, Collective::AllGather,
                       Collective::ReduceScatter, Collective::Broadcast})
    EXPECT_NEAR(getCollectiveTime(c, 4e6, 2, shm),
                getCollectiveTime(c, 4e6, 2, ring), 1e-12)
        << static_cast<int>(c);
  // all_to_all goes to the fallback's ring: 3 steps of (10 us + 1 ms).
  EXPECT_NEAR(getCollectiveTime(Collective::AllToAll, 4e6, 4, shm),
              3 * (1e-5 + 1e-3), 1e-12);
  // A measured all_reduce bandwidth (2 GB/s) moves the all_reduce's bytes
  // alone: 2 sync points and 4 MB / 2 GB/s; the others stay.
  shm.allReduceBandwidth = 2e9;
  EXPECT_NEAR(getCollectiveTime(Collective::AllReduce, 4e6, 4, shm),
              2e-5 + 2e-3, 1e-12);
  EXPECT_NEAR(getCollectiveTime(Collective::AllGather, 4e6, 4, shm),
              1e-5 + 5e6 / 3e9, 1e-12);
  // Over TCP it is not read: a ring's all_reduce.
  ring.allReduceBandwidth = 2e9;
  shm.allReduceBandwidth = 0;
  EXPECT_NEAR(getCollectiveTime(Collective::AllReduce, 4e6, 2, ring),
              getCollectiveTime(Collective::AllReduce, 4e6, 2, shm), 1e-12);
}

TEST(CostCluster, OneRankOrNoBytesCostNothing) {
  LinkSpec link{LinkKind::Tcp, 1e-4, 1e8};
  EXPECT_EQ(getCollectiveTime(Collective::AllReduce, 1e6, 1, link), 0.0);
  EXPECT_EQ(getCollectiveTime(Collective::AllGather, 0, 8, link), 0.0);
}

TEST(CostCluster, OpTimeIsTheSlowerOfComputeAndMemory) {
  DeviceSpec d{"d", 1e12, 4e12, 0.5, 0.25, 1e9, 1e11, 1e-6};
  // A GEMM of 1 GFLOP in bf16: 1e9 / (4e12 x 0.5) = 0.5 ms.
  EXPECT_NEAR(d.getOpTime(WorkClass::Matmul, Precision::BF16, 1e9, 1e3),
              5e-4 + 1e-6, 1e-12);
  // f32 convolution: 1e9 / (1e12 x 0.25) = 4 ms.
  EXPECT_NEAR(d.getOpTime(WorkClass::Convolution, Precision::F32, 1e9, 0),
              4e-3 + 1e-6, 1e-12);
  // Elementwise over 1 GB: memory-bound, 10 ms.
  EXPECT_NEAR(d.getOpTime(WorkClass::Elementwise, Precision::F32, 2.5e8, 1e9),
              1e-2 + 1e-6, 1e-12);
  // No bf16 peak: bf16 runs at the f32 one.
  DeviceSpec cpu{"c", 1e11, 0, 1.0, 1.0, 1e9, 1e10, 0};
  EXPECT_EQ(cpu.getFlopRate(WorkClass::Matmul, Precision::BF16), 1e11);
}

TEST(CostCluster, GemmsSaturateWithTheirContraction) {
  DeviceSpec d{"d", 1e12, 0, 0.5, 0.5, 1e9, 1e11, 0, 32};
  // K = 32 at K0 = 32: half of 0.5 TFLOP/s.
  EXPECT_NEAR(d.getMatmulRate(Precision::F32, 32), 2.5e11, 1e-3);
  EXPECT_NEAR(d.getOpTime(WorkClass::Matmul, Precision::F32, 1e9, 0, 32),
              4e-3, 1e-12);
  // No K (or no curve): the large-GEMM rate.
  EXPECT_NEAR(d.getOpTime(WorkClass::Matmul, Precision::F32, 1e9, 0),
              2e-3, 1e-12);
  d.matmulSaturationDim = 0;
  EXPECT_EQ(d.getMatmulRate(Precision::F32, 32), 5e11);
  // Other work ignores K.
  EXPECT_NEAR(d.getOpTime(WorkClass::Convolution, Precision::F32, 1e9, 0, 8),
              2e-3, 1e-12);
}

TEST(CostCluster, GroupLinkDependsOnWhetherTheGroupSpansNodes) {
  auto c = getBuiltinCluster("a100", 4);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->getNumDevices(), 32);
  // tp = 8 adjacent ranks: one node.
  EXPECT_EQ(c->getGroupLink(8, 1).kind, LinkKind::NVLink);
  // dp = 4 groups 8 apart: across nodes.
  EXPECT_EQ(c->getGroupLink(4, 8).kind, LinkKind::InfiniBand);
  // 2 ranks 4 apart: ranks 0 and 4, one node.
  EXPECT_EQ(c->getGroupLink(2, 4).kind, LinkKind::NVLink);
  EXPECT_EQ(c->getGroupLink(3, 4).kind, LinkKind::InfiniBand);
  // One node: every group stays in it, however many ranks share it.
  auto one = getBuiltinCluster("cpu", 1);
  one->devicesPerNode = 2;
  EXPECT_EQ(one->getGroupLink(4, 1).kind, LinkKind::SharedMemory);
}

TEST(CostCluster, BuiltinsValidateAndCarryPublishedPeaks) {
  for (llvm::StringRef name : getBuiltinClusterNames()) {
    auto c = getBuiltinCluster(name, 2);
    ASSERT_TRUE(c) << name.str();
    EXPECT_FALSE(bool(c->validate())) << name.str();
    EXPECT_EQ(c->nodes, 2);
  }
  EXPECT_EQ(getBuiltinCluster("a100")->device.peakFlopsBF16, 312e12);
  EXPECT_EQ(getBuiltinCluster("h100")->device.peakFlopsBF16, 989e12);
  // 200 Gb/s HDR per GPU is 25 GB/s.
  EXPECT_EQ(getBuiltinCluster("a100")->interNode.bandwidth, 25e9);
  EXPECT_FALSE(getBuiltinCluster("tpu"));
}

TEST(CostCluster, ValidateNamesTheBadField) {
  auto c = *getBuiltinCluster("h100");
  c.device.matmulEfficiency = 1.5;
  llvm::Error e = c.validate();
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("device.matmul_efficiency"),
            std::string::npos);
  c = *getBuiltinCluster("h100");
  c.interNode.bandwidth = -1;
  e = c.validate();
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("inter_node.bandwidth"),
            std::string::npos);
  // Finite but past its range: a cost computed from it would overflow.
  c = *getBuiltinCluster("h100");
  c.intraNode.latency = 1e308;
  e = c.validate();
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e))
                .find("intra_node.latency is 1e+308; it must be a number in "
                      "[0, 3600]"),
            std::string::npos);
  c = *getBuiltinCluster("h100");
  c.device.peakFlopsF32 = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(bool(c.validate()));
  llvm::consumeError(c.validate());
}

TEST(CostCluster, LinkKindNamesRoundTrip) {
  for (LinkKind k : {LinkKind::SharedMemory, LinkKind::Tcp, LinkKind::NVLink,
                     LinkKind::InfiniBand, LinkKind::PCIe})
    EXPECT_EQ(parseLinkKind(getLinkKindName(k)), k);
  EXPECT_FALSE(parseLinkKind("ethernet"));
}

} // namespace
