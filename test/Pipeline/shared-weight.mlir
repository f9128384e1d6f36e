// RUN: tessel-opt %s -tessel-stage-split='stages=2 rules=/s0/*=0,/s1/*=1' -tessel-microbatch=count=2 -tessel-autodiff -tessel-optimizer='kind=sgd lr=0.1' -tessel-pipeline-lower='schedule=1f1b' | FileCheck %s

// A weight two stages read, as GPT-2's embedding (stage 0) and its tied
// head (the last stage, through a transpose) read wte: each stage sums its
// part of the gradient over its microbatches; after its last action each
// holder sends its part to the other, receives the other's, adds the two
// in the one-rank program's order (stage 0's part first) and updates its
// own copy: both copies get the same update (docs/pipeline.md).
tessel.mesh @mesh ["pp"=2]
func.func @main(%x: tensor<4x3xf32>) -> tensor<f32> {
  %w = tessel.weight "w" : tensor<3x3xf32>
  %a = tessel.matmul %x, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32> loc("/s0/mm")
  %t = tessel.tanh %a : tensor<4x3xf32> loc("/s0/tanh")
  %wt = tessel.transpose %w perm = [1, 0] : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %b = tessel.matmul %t, %wt : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32> loc("/s1/mm")
  %m = tessel.mul %b, %b : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32> loc("/s1/sq")
  %l = tessel.reduce_mean %m dims = [0, 1] : (tensor<4x3xf32>) -> tensor<f32> loc("/s1/loss")
  return %l : tensor<f32>
}

// Rank 0: its part, the sum of its two microbatches' gradients.
// CHECK-LABEL: func.func @main_pp0
// CHECK: %[[W0:.*]] = tessel.weight "w"
// CHECK: %[[G00:.*]] = tessel.gemm {{.*}}tessel.microbatch = 0 : i64, tessel.phase = "BW", tessel.stage = 0 : i64, trans_a
// CHECK: %[[G01:.*]] = tessel.gemm {{.*}}tessel.microbatch = 1 : i64, tessel.phase = "BW", tessel.stage = 0 : i64, trans_a
// CHECK: %[[P0:.*]] = tessel.add %[[G00]], %[[G01]]
// The exchange, after the schedule's last action; tags after its messages'.
// CHECK-NEXT: tessel.send %[[P0]] on @mesh axes = ["pp"] target = 1 tag = 8 {tessel.microbatch = -1 : i64, tessel.phase = "SEND", tessel.stage = 0 : i64}
// CHECK-NEXT: %[[P1:.*]] = tessel.recv on @mesh axes = ["pp"] source = 1 tag = 9 {tessel.microbatch = -1 : i64, tessel.phase = "RECV", tessel.stage = 0 : i64}
// CHECK-NEXT: %[[G:.*]] = tessel.add %[[P0]], %[[P1]] {{.*}}tessel.phase = "STEP", tessel.stage = 0 : i64
// CHECK: %[[D:.*]] = tessel.mul %[[G]],
// CHECK-NEXT: %[[NEW:.*]] = tessel.sub %[[W0]], %[[D]]
// CHECK-NEXT: tessel.assign %[[W0]], %[[NEW]]
// CHECK-NEXT: return

// Rank 1: its part through the transpose (summed over the microbatches
// first), the same exchange seen from the other end, the same sum.
// CHECK-LABEL: func.func @main_pp1
// CHECK: %[[W1:.*]] = tessel.weight "w"
// CHECK: %[[H:.*]] = tessel.add {{.*}}tessel.phase = "BW", tessel.stage = 1 : i64} : (tensor<3x3xf32>
// CHECK-NEXT: %[[Q1:.*]] = tessel.transpose %[[H]] perm = [1, 0]
// CHECK: %[[Q0:.*]] = tessel.recv on @mesh axes = ["pp"] source = 0 tag = 8 {tessel.microbatch = -1 : i64, tessel.phase = "RECV", tessel.stage = 1 : i64}
// CHECK-NEXT: tessel.send %[[Q1]] on @mesh axes = ["pp"] target = 0 tag = 9 {tessel.microbatch = -1 : i64, tessel.phase = "SEND", tessel.stage = 1 : i64}
// CHECK-NEXT: %[[G1:.*]] = tessel.add %[[Q0]], %[[Q1]] {{.*}}tessel.phase = "STEP", tessel.stage = 1 : i64
// CHECK: %[[D1:.*]] = tessel.mul %[[G1]],
// CHECK-NEXT: %[[NEW1:.*]] = tessel.sub %[[W1]], %[[D1]]
// CHECK-NEXT: tessel.assign %[[W1]], %[[NEW1]]
// CHECK-NEXT: return
