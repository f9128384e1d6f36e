// RUN: tessel-opt %s -tessel-fuse-attention | FileCheck %s

// torch.onnx.export's default exporter (opset 18+): q and kt each scaled by
// sqrt(scale) beforehand, a folded causal mask [B, 1, S, T], the IsNaN
// guard (p != p) whose fill is a scalar weight.
// CHECK-LABEL: func.func @dynamo_sdpa
// CHECK: %[[Q:.*]] = tessel.mul %q
// CHECK: %[[K:.*]] = tessel.mul %kt
// CHECK-NEXT: %[[M:.*]] = tessel.weight "val_195"
// CHECK-NEXT: %[[F:.*]] = tessel.weight "val_193"
// CHECK-NEXT: %[[O:.*]], %{{.*}} = tessel.attention %[[Q]], %[[K]], %v mask %[[M]] nan_fill %[[F]] : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>, tensor<2x1x16x16xf32>, tensor<f32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16xf32>)
// CHECK-NEXT: return %[[O]]
// CHECK-NOT: tessel.softmax
func.func @dynamo_sdpa(%q: tensor<2x4x16x8xf32>, %kt: tensor<2x4x8x16xf32>, %v: tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32> {
  %c = tessel.weight "val_189" : tensor<f32>
  %0 = tessel.mul %q, %c : (tensor<2x4x16x8xf32>, tensor<f32>) -> tensor<2x4x16x8xf32>
  %1 = tessel.mul %kt, %c : (tensor<2x4x8x16xf32>, tensor<f32>) -> tensor<2x4x8x16xf32>
  %2 = tessel.matmul %0, %1 : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x16x16xf32>
  %m = tessel.weight "val_195" : tensor<2x1x16x16xf32>
  %3 = tessel.add %2, %m : (tensor<2x4x16x16xf32>, tensor<2x1x16x16xf32>) -> tensor<2x4x16x16xf32>
  %4 = tessel.softmax %3 axis = 3 : tensor<2x4x16x16xf32>
  %5 = tessel.compare ne, %4, %4 : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xi1>
  %z = tessel.weight "val_193" : tensor<f32>
  %6 = tessel.where %5, %z, %4 : (tensor<2x4x16x16xi1>, tensor<f32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %7 = tessel.matmul %6, %v : (tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32>
  return %7 : tensor<2x4x16x8xf32>
}

// The TorchScript exporter and transformers' eager attention: the product
// divided by a constant, the mask [S, T] added on the left, no guard, keys
// and queries of different lengths.
// CHECK-LABEL: func.func @legacy_div_scale
// CHECK-NEXT: %[[O:.*]], %{{.*}} = tessel.attention %q, %kt, %v mask %m {scale = 2.500000e-01 : f32} : (tensor<3x5x8xf32>, tensor<3x8x7xf32>, tensor<3x7x6xf32>, tensor<5x7xf32>) -> (tensor<3x5x6xf32>, tensor<3x5xf32>)
// CHECK-NEXT: return %[[O]]
func.func @legacy_div_scale(%q: tensor<3x5x8xf32>, %kt: tensor<3x8x7xf32>, %v: tensor<3x7x6xf32>, %m: tensor<5x7xf32>) -> tensor<3x5x6xf32> {
  %0 = tessel.matmul %q, %kt : (tensor<3x5x8xf32>, tensor<3x8x7xf32>) -> tensor<3x5x7xf32>
  %c = tessel.constant dense<4.0> : tensor<f32>
  %1 = tessel.div %0, %c : (tensor<3x5x7xf32>, tensor<f32>) -> tensor<3x5x7xf32>
  %2 = tessel.add %m, %1 : (tensor<5x7xf32>, tensor<3x5x7xf32>) -> tensor<3x5x7xf32>
  %3 = tessel.softmax %2 axis = 2 : tensor<3x5x7xf32>
  %4 = tessel.matmul %3, %v : (tensor<3x5x7xf32>, tensor<3x7x6xf32>) -> tensor<3x5x6xf32>
  return %4 : tensor<3x5x6xf32>
}

// No mask, a constant scale multiplied on the left.
// CHECK-LABEL: func.func @unmasked
// CHECK-NEXT: %[[O:.*]], %{{.*}} = tessel.attention %q, %kt, %v {scale = 1.250000e-01 : f32}
// CHECK-NEXT: return %[[O]]
func.func @unmasked(%q: tensor<4x6x8xf32>, %kt: tensor<4x8x6xf32>, %v: tensor<4x6x8xf32>) -> tensor<4x6x8xf32> {
  %0 = tessel.matmul %q, %kt : (tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<4x6x6xf32>
  %c = tessel.constant dense<0.125> : tensor<f32>
  %1 = tessel.mul %c, %0 : (tensor<f32>, tensor<4x6x6xf32>) -> tensor<4x6x6xf32>
  %2 = tessel.softmax %1 axis = 2 : tensor<4x6x6xf32>
  %3 = tessel.matmul %2, %v : (tensor<4x6x6xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  return %3 : tensor<4x6x8xf32>
}

// Not fused: the probabilities are also a result (output_attentions); the
// softmax is over another axis; the keys broadcast over the batch.
// CHECK-LABEL: func.func @not_attention
// CHECK-NOT: tessel.attention
// CHECK: return
func.func @not_attention(%q: tensor<4x6x8xf32>, %kt: tensor<4x8x6xf32>, %k1: tensor<1x8x6xf32>, %v: tensor<4x6x8xf32>) -> (tensor<4x6x8xf32>, tensor<4x6x6xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>) {
  %0 = tessel.matmul %q, %kt : (tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<4x6x6xf32>
  %1 = tessel.softmax %0 axis = 2 : tensor<4x6x6xf32>
  %2 = tessel.matmul %1, %v : (tensor<4x6x6xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  %3 = tessel.matmul %q, %kt : (tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<4x6x6xf32>
  %4 = tessel.softmax %3 axis = 1 : tensor<4x6x6xf32>
  %5 = tessel.matmul %4, %v : (tensor<4x6x6xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  %6 = tessel.matmul %q, %k1 : (tensor<4x6x8xf32>, tensor<1x8x6xf32>) -> tensor<4x6x6xf32>
  %7 = tessel.softmax %6 axis = 2 : tensor<4x6x6xf32>
  %8 = tessel.matmul %7, %v : (tensor<4x6x6xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  return %2, %1, %5, %8 : tensor<4x6x8xf32>, tensor<4x6x6xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>
}
