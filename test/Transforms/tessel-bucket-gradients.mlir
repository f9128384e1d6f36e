// RUN: tessel-opt %s -tessel-bucket-gradients -split-input-file | FileCheck %s
// RUN: tessel-opt %s -tessel-bucket-gradients=bucket-mb=0.00003 -split-input-file | FileCheck %s --check-prefix=SMALL
// RUN: tessel-opt %s -tessel-bucket-gradients=bucket-mb=0 -split-input-file | FileCheck %s --check-prefix=OFF

// A partitioned training step: the loss's all_reduce feeds the result and
// stays as it is; the three gradients' all_reduces (partial over dp) feed
// only the update: one bucket. The gradients are flattened and
// concatenated right after the last of them, one all_reduce marked
// tessel.bucket runs there, and each gradient is sliced back out right
// before its first use.
tessel.mesh @mesh ["dp"=2]

// CHECK-LABEL: func.func @step
// CHECK: %[[L:.*]] = tessel.all_reduce sum %{{.*}} on @mesh axes = ["dp"] : tensor<f32>
// CHECK-NOT: tessel.bucket
// CHECK: %[[G1:.*]] = tessel.mul %x, %x
// CHECK-NEXT: %[[G2:.*]] = tessel.reshape %[[G1]] : (tensor<4xf32>) -> tensor<2x2xf32>
// CHECK-NEXT: %[[G3:.*]] = tessel.concat %[[G1]], %[[G1]] dim = 0
// CHECK-NEXT: %[[F2:.*]] = tessel.reshape %[[G2]] : (tensor<2x2xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[CAT:.*]] = tessel.concat %[[G1]], %[[F2]], %[[G3]] dim = 0 : (tensor<4xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<16xf32>
// CHECK-NEXT: %[[AR:.*]] = tessel.all_reduce sum %[[CAT]] on @mesh axes = ["dp"] {tessel.bucket = 0 : i64} : tensor<16xf32>
// CHECK-NEXT: %[[LOSS:.*]] = tessel.neg %[[L]]
// CHECK-NEXT: %[[S1:.*]] = tessel.slice %[[AR]] [0:4:1] : (tensor<16xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[U1:.*]] = tessel.sub %{{.*}}, %[[S1]]
// CHECK-NEXT: tessel.assign %{{.*}}, %[[U1]]
// CHECK-NEXT: %[[S2:.*]] = tessel.slice %[[AR]] [4:8:1] : (tensor<16xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[R2:.*]] = tessel.reshape %[[S2]] : (tensor<4xf32>) -> tensor<2x2xf32>
// CHECK-NEXT: tessel.sub %{{.*}}, %[[R2]]
// CHECK: %[[S3:.*]] = tessel.slice %[[AR]] [8:16:1] : (tensor<16xf32>) -> tensor<8xf32>
// CHECK-NEXT: tessel.sub %{{.*}}, %[[S3]]
// CHECK-NOT: tessel.all_reduce
// CHECK: return %[[LOSS]]

// A cap of 31 bytes: the first two gradients (16 + 16 bytes) fill a bucket,
// the third (32 bytes) is a bucket of its own, its all_reduce kept and
// marked.
// SMALL-LABEL: func.func @step
// SMALL: tessel.concat %{{.*}}, %{{.*}} dim = 0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
// SMALL-NEXT: tessel.all_reduce sum %{{.*}} on @mesh axes = ["dp"] {tessel.bucket = 0 : i64} : tensor<8xf32>
// SMALL: tessel.all_reduce sum %{{.*}} on @mesh axes = ["dp"] {tessel.bucket = 1 : i64} : tensor<8xf32>

// OFF-LABEL: func.func @step
// OFF-NOT: tessel.bucket
// OFF-NOT: tessel.concat %{{.*}}, %{{.*}}, %{{.*}}
func.func @step(%x: tensor<4xf32>) -> tensor<f32> attributes {tessel.output_names = ["loss"]} {
  %w1 = tessel.weight "w1" : tensor<4xf32>
  %w2 = tessel.weight "w2" : tensor<2x2xf32>
  %w3 = tessel.weight "w3" : tensor<8xf32>
  %p = tessel.reduce_sum %x dims = [0] : (tensor<4xf32>) -> tensor<f32>
  %l = tessel.all_reduce sum %p on @mesh axes = ["dp"] : tensor<f32>
  %g1 = tessel.mul %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %r1 = tessel.all_reduce sum %g1 on @mesh axes = ["dp"] : tensor<4xf32>
  %g2 = tessel.reshape %g1 : (tensor<4xf32>) -> tensor<2x2xf32>
  %r2 = tessel.all_reduce sum %g2 on @mesh axes = ["dp"] : tensor<2x2xf32>
  %g3 = tessel.concat %g1, %g1 dim = 0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %r3 = tessel.all_reduce sum %g3 on @mesh axes = ["dp"] : tensor<8xf32>
  %loss = tessel.neg %l : tensor<f32>
  %u1 = tessel.sub %w1, %r1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %a1 = tessel.assign %w1, %u1 : tensor<4xf32>
  %u2 = tessel.sub %w2, %r2 : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %a2 = tessel.assign %w2, %u2 : tensor<2x2xf32>
  %u3 = tessel.sub %w3, %r3 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %a3 = tessel.assign %w3, %u3 : tensor<8xf32>
  return %loss : tensor<f32>
}

// -----

// The first gradient's update sits right after it (where -tessel-optimizer
// puts it, to free the gradient early): it moves after the backward, with
// its assign, so both gradients share one bucket.
tessel.mesh @mesh ["dp"=2]

// CHECK-LABEL: func.func @update_early
// CHECK: %[[G1:.*]] = tessel.mul
// CHECK-NEXT: %[[G2:.*]] = tessel.add
// CHECK-NEXT: %[[CAT:.*]] = tessel.concat %[[G1]], %[[G2]] dim = 0
// CHECK-NEXT: %[[R:.*]] = tessel.all_reduce sum %[[CAT]] on @mesh axes = ["dp"] {tessel.bucket = 0 : i64} : tensor<8xf32>
// CHECK-NEXT: %[[S1:.*]] = tessel.slice %[[R]] [0:4:1]
// CHECK-NEXT: %[[U1:.*]] = tessel.sub %{{.*}}, %[[S1]]
// CHECK-NEXT: tessel.assign %{{.*}}, %[[U1]]
// CHECK-NEXT: %[[S2:.*]] = tessel.slice %[[R]] [4:8:1]
// CHECK-NOT: tessel.bucket = 1
func.func @update_early(%x: tensor<4xf32>) -> tensor<f32> attributes {tessel.output_names = ["loss"]} {
  %w1 = tessel.weight "w1" : tensor<4xf32>
  %w2 = tessel.weight "w2" : tensor<4xf32>
  %loss = tessel.reduce_sum %x dims = [0] : (tensor<4xf32>) -> tensor<f32>
  %g1 = tessel.mul %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %r1 = tessel.all_reduce sum %g1 on @mesh axes = ["dp"] : tensor<4xf32>
  %u1 = tessel.sub %w1, %r1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %a1 = tessel.assign %w1, %u1 : tensor<4xf32>
  %g2 = tessel.add %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %r2 = tessel.all_reduce sum %g2 on @mesh axes = ["dp"] : tensor<4xf32>
  %u2 = tessel.sub %w2, %r2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %a2 = tessel.assign %w2, %u2 : tensor<4xf32>
  return %loss : tensor<f32>
}

// -----

// An all_reduce whose result reaches another collective (Megatron's
// backward, feeding a dp gradient) is no gradient of the update: kept.
tessel.mesh @mesh ["dp"=2, "tp"=2]

// CHECK-LABEL: func.func @feeds_collective
// CHECK: %[[T:.*]] = tessel.all_reduce sum %{{.*}} on @mesh axes = ["tp"] : tensor<4xf32>
// CHECK: tessel.all_reduce sum %{{.*}} on @mesh axes = ["dp"] {tessel.bucket = 0 : i64}
func.func @feeds_collective(%x: tensor<4xf32>) -> tensor<f32> attributes {tessel.output_names = ["loss"]} {
  %w1 = tessel.weight "w1" : tensor<4xf32>
  %loss = tessel.reduce_sum %x dims = [0] : (tensor<4xf32>) -> tensor<f32>
  %t = tessel.all_reduce sum %x on @mesh axes = ["tp"] : tensor<4xf32>
  %g1 = tessel.mul %t, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %r1 = tessel.all_reduce sum %g1 on @mesh axes = ["dp"] : tensor<4xf32>
  %u1 = tessel.sub %w1, %r1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %a1 = tessel.assign %w1, %u1 : tensor<4xf32>
  return %loss : tensor<f32>
}

// -----

// ZeRO stage 1: each update reads this rank's block of its parameter (a
// local_slice of the weight, right before the update) and of its
// all-reduced gradient. The block of the parameter moves with the update:
// left in the backward, every parameter's block would be alive from there
// to the end of the step, beside the buckets.
tessel.mesh @mesh ["dp"=2]

// CHECK-LABEL: func.func @zero1_blocks
// CHECK: %[[G1:.*]] = tessel.mul
// CHECK-NEXT: %[[G2:.*]] = tessel.add
// CHECK-NEXT: %[[CAT:.*]] = tessel.concat %[[G1]], %[[G2]] dim = 0
// CHECK-NEXT: %[[R:.*]] = tessel.all_reduce sum %[[CAT]] on @mesh axes = ["dp"] {tessel.bucket = 0 : i64} : tensor<8xf32>
// CHECK-NEXT: %[[P1:.*]] = tessel.local_slice %[[W1:.*]] on @mesh axes = ["dp"] dim = 0
// CHECK-NEXT: %[[S1:.*]] = tessel.slice %[[R]] [0:4:1]
// CHECK-NEXT: %[[B1:.*]] = tessel.local_slice %[[S1]] on @mesh axes = ["dp"] dim = 0
// CHECK-NEXT: %[[U1:.*]], %{{.*}} = tessel.sgd_update %[[P1]], %[[B1]]
// CHECK-NEXT: %[[A1:.*]] = tessel.all_gather %[[U1]]
// CHECK-NEXT: tessel.assign %[[W1]], %[[A1]]
// CHECK-NEXT: tessel.assign
// CHECK-NEXT: %[[P2:.*]] = tessel.local_slice %[[W2:.*]] on @mesh axes = ["dp"] dim = 0
// CHECK-NEXT: %[[S2:.*]] = tessel.slice %[[R]] [4:8:1]
// CHECK-NEXT: %[[B2:.*]] = tessel.local_slice %[[S2]] on @mesh axes = ["dp"] dim = 0
// CHECK-NEXT: tessel.sgd_update %[[P2]], %[[B2]]
func.func @zero1_blocks(%x: tensor<4xf32>) -> tensor<f32> attributes {tessel.output_names = ["loss"]} {
  %w1 = tessel.weight "w1" : tensor<4xf32>
  %w2 = tessel.weight "w2" : tensor<4xf32>
  %m1 = tessel.weight "momentum_buffer.w1" zeros : tensor<2xf32>
  %m2 = tessel.weight "momentum_buffer.w2" zeros : tensor<2xf32>
  %lr = tessel.constant dense<0.1> : tensor<f32>
  %loss = tessel.reduce_sum %x dims = [0] : (tensor<4xf32>) -> tensor<f32>
  %g1 = tessel.mul %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %r1 = tessel.all_reduce sum %g1 on @mesh axes = ["dp"] : tensor<4xf32>
  %p1 = tessel.local_slice %w1 on @mesh axes = ["dp"] dim = 0 : (tensor<4xf32>) -> tensor<2xf32>
  %b1 = tessel.local_slice %r1 on @mesh axes = ["dp"] dim = 0 : (tensor<4xf32>) -> tensor<2xf32>
  %u1:2 = tessel.sgd_update %p1, %b1, %m1, %lr {momentum = 0.9 : f32} : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<f32>) -> (tensor<2xf32>, tensor<2xf32>)
  %n1 = tessel.all_gather %u1#0 on @mesh axes = ["dp"] dim = 0 : (tensor<2xf32>) -> tensor<4xf32>
  %a1 = tessel.assign %w1, %n1 : tensor<4xf32>
  %c1 = tessel.assign %m1, %u1#1 : tensor<2xf32>
  %g2 = tessel.add %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %r2 = tessel.all_reduce sum %g2 on @mesh axes = ["dp"] : tensor<4xf32>
  %p2 = tessel.local_slice %w2 on @mesh axes = ["dp"] dim = 0 : (tensor<4xf32>) -> tensor<2xf32>
  %b2 = tessel.local_slice %r2 on @mesh axes = ["dp"] dim = 0 : (tensor<4xf32>) -> tensor<2xf32>
  %u2:2 = tessel.sgd_update %p2, %b2, %m2, %lr {momentum = 0.9 : f32} : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<f32>) -> (tensor<2xf32>, tensor<2xf32>)
  %n2 = tessel.all_gather %u2#0 on @mesh axes = ["dp"] dim = 0 : (tensor<2xf32>) -> tensor<4xf32>
  %a2 = tessel.assign %w2, %n2 : tensor<4xf32>
  %c2 = tessel.assign %m2, %u2#1 : tensor<2xf32>
  return %loss : tensor<f32>
}
