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
