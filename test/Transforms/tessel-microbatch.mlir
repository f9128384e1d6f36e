// RUN: tessel-opt %s -split-input-file -verify-diagnostics -tessel-microbatch=count=2 | FileCheck %s

// Each argument is sliced along dim 0; the ops that depend on them are
// copied per microbatch (each copy tagged with its microbatch) with the batch halved (reshape: the dim the batch
// went to); weights are shared; the loss is the mean of the two.
// CHECK-LABEL: func.func @main
// CHECK: %[[W:.*]] = tessel.weight "w" : tensor<4x3xf32>
// CHECK: %[[X0:.*]] = tessel.slice %x [0:2:1, 0:5:1, 0:4:1] : (tensor<4x5x4xf32>) -> tensor<2x5x4xf32>
// CHECK: %[[T0:.*]] = tessel.slice %t [0:2:1, 0:5:1, 0:3:1] : (tensor<4x5x3xf32>) -> tensor<2x5x3xf32>
// CHECK: %[[F0:.*]] = tessel.reshape %[[X0]] {tessel.microbatch = 0 : i64} : (tensor<2x5x4xf32>) -> tensor<10x4xf32>
// CHECK: %[[Y0:.*]] = tessel.matmul %[[F0]], %[[W]] {tessel.microbatch = 0 : i64} : (tensor<10x4xf32>, tensor<4x3xf32>) -> tensor<10x3xf32>
// CHECK: %[[R0:.*]] = tessel.reshape %[[Y0]] {tessel.microbatch = 0 : i64} : (tensor<10x3xf32>) -> tensor<2x5x3xf32>
// CHECK: %[[L0:.*]] = tessel.reduce_mean {{.*}} : (tensor<2x5x3xf32>) -> tensor<f32>
// CHECK: tessel.slice %x [2:4:1, 0:5:1, 0:4:1]
// CHECK: tessel.slice %t [2:4:1, 0:5:1, 0:3:1]
// CHECK: %[[L1:.*]] = tessel.reduce_mean {{.*}} : (tensor<2x5x3xf32>) -> tensor<f32>
// CHECK: %[[S:.*]] = tessel.add %[[L0]], %[[L1]]
// CHECK: %[[K:.*]] = tessel.constant dense<2.000000e+00> : tensor<f32>
// CHECK: %[[M:.*]] = tessel.div %[[S]], %[[K]]
// CHECK: return %[[M]] : tensor<f32>
func.func @main(%x: tensor<4x5x4xf32>, %t: tensor<4x5x3xf32>) -> tensor<f32> {
  %w = tessel.weight "w" : tensor<4x3xf32>
  %f = tessel.reshape %x : (tensor<4x5x4xf32>) -> tensor<20x4xf32>
  %y = tessel.matmul %f, %w : (tensor<20x4xf32>, tensor<4x3xf32>) -> tensor<20x3xf32>
  %r = tessel.reshape %y : (tensor<20x3xf32>) -> tensor<4x5x3xf32>
  %d = tessel.sub %r, %t : (tensor<4x5x3xf32>, tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
  %s = tessel.mul %d, %d : (tensor<4x5x3xf32>, tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
  %l = tessel.reduce_mean %s dims = [0, 1, 2] : (tensor<4x5x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @below {{argument 0 ('tensor<3x4xf32>') has no dim 0 that 2 microbatches divide}}
func.func @odd(%x: tensor<3x4xf32>) -> tensor<f32> {
  %l = tessel.reduce_sum %x dims = [0, 1] : (tensor<3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @below {{must return its loss alone}}
func.func @no_loss(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  return %x : tensor<2x4xf32>
}

// -----

// Tables shared by the microbatches (they depend on no argument) are not
// split, whatever their leading dim: a [1, 4] table broadcast over the
// batch stays whole; a [4, 1] mask whose dim 0 meets the batch (the add's
// rule maps it to the batch's factor) gives each microbatch its rows; a
// slice of the whole batch takes the whole microbatch.
// CHECK-LABEL: func.func @shared
// CHECK: %[[TAB:.*]] = tessel.weight "table" : tensor<1x4xf32>
// CHECK: %[[MASK:.*]] = tessel.weight "mask" : tensor<4x1xf32>
// CHECK: %[[X0:.*]] = tessel.slice %x [0:2:1, 0:4:1]
// CHECK: tessel.mul %[[X0]], %[[TAB]] {tessel.microbatch = 0 : i64} : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
// CHECK: %[[M0:.*]] = tessel.slice %[[MASK]] [0:2:1, 0:1:1] {tessel.microbatch = 0 : i64} : (tensor<4x1xf32>) -> tensor<2x1xf32>
// CHECK: tessel.add %{{.*}}, %[[M0]] {tessel.microbatch = 0 : i64} : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
// CHECK: tessel.slice %{{.*}} [0:2:1, 0:2:1] {tessel.microbatch = 0 : i64} : (tensor<2x4xf32>) -> tensor<2x2xf32>
// CHECK: tessel.slice %x [2:4:1, 0:4:1]
// CHECK: %[[M1:.*]] = tessel.slice %[[MASK]] [2:4:1, 0:1:1] {tessel.microbatch = 1 : i64} : (tensor<4x1xf32>) -> tensor<2x1xf32>
// CHECK: tessel.add %{{.*}}, %[[M1]] {tessel.microbatch = 1 : i64}
// CHECK: tessel.slice %{{.*}} [0:2:1, 0:2:1] {tessel.microbatch = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x2xf32>
func.func @shared(%x: tensor<4x4xf32>) -> tensor<f32> {
  %table = tessel.weight "table" : tensor<1x4xf32>
  %mask = tessel.weight "mask" : tensor<4x1xf32>
  %a = tessel.mul %x, %table : (tensor<4x4xf32>, tensor<1x4xf32>) -> tensor<4x4xf32>
  %b = tessel.add %a, %mask : (tensor<4x4xf32>, tensor<4x1xf32>) -> tensor<4x4xf32>
  %c = tessel.slice %b [0:4:1, 0:2:1] : (tensor<4x4xf32>) -> tensor<4x2xf32>
  %l = tessel.reduce_mean %c dims = [0, 1] : (tensor<4x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
