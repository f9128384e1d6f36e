// -tessel-gather-at-use on a partitioned program whose parameters are kept
// in blocks (ZeRO stage 3): each all_gather of a weight is repeated right
// before each user (w1 is read twice, as in the forward and the backward).
// With prefetch=K the gathers are asynchronous (tessel.async) and the one
// for the i-th use is issued right before the (i-K)-th use, the weight
// moving with it; the gathers keep their order.
// RUN: tessel-opt %s --tessel-gather-at-use | FileCheck %s --check-prefix=SYNC
// RUN: tessel-opt %s --tessel-gather-at-use='prefetch=1' | FileCheck %s --check-prefix=K1
// RUN: tessel-opt %s --tessel-gather-at-use='prefetch=2' | FileCheck %s --check-prefix=K2
// RUN: not tessel-opt %s --tessel-gather-at-use='prefetch=-1' 2>&1 | FileCheck %s --check-prefix=NEG

module {
  tessel.mesh @mesh ["dp"=2]
  func.func @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %w1 = tessel.weight "w1" {tessel.global_sharding = #tessel.sharding<@mesh, [{"dp"}, {}]>} : tensor<2x4xf32>
    %g1 = tessel.all_gather %w1 on @mesh axes = ["dp"] dim = 0 : (tensor<2x4xf32>) -> tensor<4x4xf32>
    %a = tessel.matmul %x, %g1 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %w2 = tessel.weight "w2" {tessel.global_sharding = #tessel.sharding<@mesh, [{"dp"}, {}]>} : tensor<2x4xf32>
    %g2 = tessel.all_gather %w2 on @mesh axes = ["dp"] dim = 0 : (tensor<2x4xf32>) -> tensor<4x4xf32>
    %b = tessel.matmul %a, %g2 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %w3 = tessel.weight "w3" {tessel.global_sharding = #tessel.sharding<@mesh, [{"dp"}, {}]>} : tensor<2x4xf32>
    %g3 = tessel.all_gather %w3 on @mesh axes = ["dp"] dim = 0 : (tensor<2x4xf32>) -> tensor<4x4xf32>
    %c = tessel.matmul %b, %g3 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %d = tessel.matmul %c, %g1 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    return %d : tensor<4x4xf32>
  }
}

// SYNC: %[[W1:.*]] = tessel.weight "w1"
// SYNC-NEXT: %[[G1:.*]] = tessel.all_gather %[[W1]] on @mesh axes = ["dp"] dim = 0 : (tensor<2x4xf32>)
// SYNC-NEXT: %[[A:.*]] = tessel.matmul %{{.*}}, %[[G1]]
// SYNC-NEXT: %[[W2:.*]] = tessel.weight "w2"
// SYNC-NEXT: %[[G2:.*]] = tessel.all_gather %[[W2]]
// SYNC-NEXT: tessel.matmul %[[A]], %[[G2]]
// SYNC: tessel.all_gather %[[W1]]
// SYNC-NEXT: tessel.matmul
// SYNC-NEXT: return
// SYNC-NOT: tessel.async

// K1: %[[W1:.*]] = tessel.weight "w1"
// K1-NEXT: %[[G1:.*]] = tessel.all_gather %[[W1]] on @mesh axes = ["dp"] dim = 0 {tessel.async}
// K1-NEXT: %[[W2:.*]] = tessel.weight "w2"
// K1-NEXT: %[[G2:.*]] = tessel.all_gather %[[W2]] {{.*}}{tessel.async}
// K1-NEXT: %[[A:.*]] = tessel.matmul %{{.*}}, %[[G1]]
// K1-NEXT: %[[W3:.*]] = tessel.weight "w3"
// K1-NEXT: %[[G3:.*]] = tessel.all_gather %[[W3]] {{.*}}{tessel.async}
// K1-NEXT: %[[B:.*]] = tessel.matmul %[[A]], %[[G2]]
// K1-NEXT: %[[G1B:.*]] = tessel.all_gather %[[W1]] {{.*}}{tessel.async}
// K1-NEXT: %[[C:.*]] = tessel.matmul %[[B]], %[[G3]]
// K1-NEXT: tessel.matmul %[[C]], %[[G1B]]
// K1-NEXT: return

// K2: %[[W1:.*]] = tessel.weight "w1"
// K2-NEXT: tessel.all_gather %[[W1]] {{.*}}{tessel.async}
// K2-NEXT: %[[W2:.*]] = tessel.weight "w2"
// K2-NEXT: tessel.all_gather %[[W2]] {{.*}}{tessel.async}
// K2-NEXT: %[[W3:.*]] = tessel.weight "w3"
// K2-NEXT: tessel.all_gather %[[W3]] {{.*}}{tessel.async}
// K2-NEXT: tessel.matmul
// K2-NEXT: tessel.all_gather %[[W1]] {{.*}}{tessel.async}
// K2-NEXT: tessel.matmul
// K2-NEXT: tessel.matmul
// K2-NEXT: tessel.matmul
// K2-NEXT: return

// NEG: error: prefetch must be >= 0 (got -1)

