// RUN: tessel-opt %s -split-input-file -verify-diagnostics -tessel-batch-norm-train | FileCheck %s
// RUN: tessel-opt %s -split-input-file -tessel-batch-norm-train=update-running-stats=false | FileCheck %s --check-prefix=NOUPDATE

// Batch statistics over every dim but 1 (mean, then the mean of squared
// deviations, one batch_norm_variance), an inference batch_norm with them,
// marked batch_stats; the running statistics
// get PyTorch's update (ONNX momentum 0.9: 0.1 of the batch; the variance
// unbiased, n = 2 * 3 = 6) and are assigned at the end.
// CHECK-LABEL: func.func @one
// CHECK: %[[RM:.*]] = tessel.weight "bn.running_mean"
// CHECK: %[[RV:.*]] = tessel.weight "bn.running_var"
// CHECK: %[[M:.*]] = tessel.reduce_mean %x dims = [0, 2] : (tensor<2x4x3xf32>) -> tensor<4xf32>
// CHECK: %[[V:.*]] = tessel.batch_norm_variance %x, %[[M]] : (tensor<2x4x3xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK: %[[Y:.*]] = tessel.batch_norm %x, %{{.*}}, %{{.*}}, %[[M]], %[[V]] {batch_stats, epsilon = 1.000000e-03 : f32}
// CHECK: %[[N:.*]] = tessel.constant dense<1.200000e+00> : tensor<f32>
// CHECK: %[[UV:.*]] = tessel.mul %[[V]], %[[N]]
// CHECK: %[[KEEP:.*]] = tessel.constant dense<0.899999976> : tensor<f32>
// CHECK: %[[OLD:.*]] = tessel.mul %[[RM]], %[[KEEP]]
// CHECK: %[[NEW:.*]] = tessel.constant dense<0.100000024> : tensor<f32>
// CHECK: %[[BM:.*]] = tessel.mul %[[M]], %[[NEW]]
// CHECK: %[[NM:.*]] = tessel.add %[[BM]], %[[OLD]]
// CHECK: tessel.mul %[[RV]]
// CHECK: tessel.mul %[[UV]]
// CHECK: %[[NV:.*]] = tessel.add
// CHECK: tessel.assign %[[RM]], %[[NM]]
// CHECK: tessel.assign %[[RV]], %[[NV]]
// CHECK: return %[[Y]]
// NOUPDATE-LABEL: func.func @one
// NOUPDATE: tessel.batch_norm
// NOUPDATE-NOT: tessel.assign
func.func @one(%x: tensor<2x4x3xf32>) -> tensor<2x4x3xf32> {
  %s = tessel.weight "bn.weight" : tensor<4xf32>
  %b = tessel.weight "bn.bias" : tensor<4xf32>
  %rm = tessel.weight "bn.running_mean" : tensor<4xf32>
  %rv = tessel.weight "bn.running_var" : tensor<4xf32>
  %y = tessel.batch_norm_train %x, %s, %b, %rm, %rv {epsilon = 1.0e-03 : f32} : (tensor<2x4x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3xf32>
  return %y : tensor<2x4x3xf32>
}

// -----

// Two ops updating the same statistics (one BatchNorm's microbatch copies)
// chain their updates in program order; one assign each.
// CHECK-LABEL: func.func @chained
// CHECK: %[[RM:.*]] = tessel.weight "bn.running_mean"
// CHECK: %[[A0:.*]] = tessel.mul %[[RM]], %{{.*}} : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
// CHECK: %[[U0:.*]] = tessel.add %{{.*}}, %[[A0]]
// CHECK: %[[A1:.*]] = tessel.mul %[[U0]], %{{.*}} : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
// CHECK: %[[U1:.*]] = tessel.add %{{.*}}, %[[A1]]
// CHECK: tessel.assign %[[RM]], %[[U1]]
// CHECK-NOT: tessel.assign %[[RM]]
func.func @chained(%x0: tensor<1x2x2x2xf32>, %x1: tensor<1x2x2x2xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %s = tessel.weight "bn.weight" : tensor<2xf32>
  %b = tessel.weight "bn.bias" : tensor<2xf32>
  %rm = tessel.weight "bn.running_mean" : tensor<2xf32>
  %rv = tessel.weight "bn.running_var" : tensor<2xf32>
  %y0 = tessel.batch_norm_train %x0, %s, %b, %rm, %rv : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %y1 = tessel.batch_norm_train %x1, %s, %b, %rm, %rv : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  return %y0, %y1 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}

// -----

// Statistics that are no weight cannot be updated (without updates they
// are only read: fine).
// NOUPDATE-LABEL: func.func @not_a_weight
func.func @not_a_weight(%x: tensor<2x2xf32>, %rm: tensor<2xf32>) -> tensor<2x2xf32> {
  %s = tessel.weight "bn.weight" : tensor<2xf32>
  %rv = tessel.weight "bn.running_var" : tensor<2xf32>
  // expected-error @below {{'tessel.batch_norm_train' op cannot update its running_mean: it is not a model weight (tessel.weight)}}
  %y = tessel.batch_norm_train %x, %s, %s, %rm, %rv : (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

// A batch norm that tracks no statistics (torch's track_running_stats=False,
// or F.batch_norm(x, None, None, training=True), as BiT's weight
// standardisation): the dynamo exporter writes constants in their place,
// the TorchScript one the batch's own statistics with ONNX momentum 1 (the
// running value kept as it is). Either way nothing is updated, nothing
// assigned.
// CHECK-LABEL: func.func @untracked_constants
// CHECK: tessel.batch_norm %x, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {batch_stats
// CHECK-NOT: tessel.assign
// CHECK: return
func.func @untracked_constants(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %s = tessel.weight "bn.weight" : tensor<2xf32>
  %b = tessel.weight "bn.bias" : tensor<2xf32>
  %rm = tessel.constant dense<0.0> : tensor<2xf32>
  %rv = tessel.constant dense<1.0> : tensor<2xf32>
  %y = tessel.batch_norm_train %x, %s, %b, %rm, %rv : (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

// CHECK-LABEL: func.func @untracked_momentum_one
// CHECK: tessel.batch_norm %x, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {batch_stats
// CHECK-NOT: tessel.assign
// CHECK: return
func.func @untracked_momentum_one(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %s = tessel.weight "bn.weight" : tensor<2xf32>
  %b = tessel.weight "bn.bias" : tensor<2xf32>
  %rm = tessel.reduce_mean %x dims = [0] : (tensor<2x2xf32>) -> tensor<2xf32>
  %rv = tessel.batch_norm_variance %x, %rm : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %y = tessel.batch_norm_train %x, %s, %b, %rm, %rv {momentum = 1.0 : f32} : (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}
