// RUN: tessel-opt %s -tessel-fuse-layer-norm | FileCheck %s

// PyTorch's export of nn.LayerNorm(8) at opset 14 (torch 1.13).
// CHECK-LABEL: func.func @torch_opset14
// (epsilon 1e-5 is the default, not printed)
// CHECK-NEXT: %[[N:.*]] = tessel.layer_norm %x, %w, %b axis = 2 : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT: return %[[N]]
func.func @torch_opset14(%x: tensor<2x3x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x3x8xf32> {
  %0 = tessel.reduce_mean %x dims = [2] keep_dims : (tensor<2x3x8xf32>) -> tensor<2x3x1xf32>
  %1 = tessel.sub %x, %0 : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
  %two = tessel.constant dense<2.000000e+00> : tensor<f32>
  %2 = tessel.pow %1, %two : (tensor<2x3x8xf32>, tensor<f32>) -> tensor<2x3x8xf32>
  %3 = tessel.reduce_mean %2 dims = [2] keep_dims : (tensor<2x3x8xf32>) -> tensor<2x3x1xf32>
  %eps = tessel.constant dense<9.99999974E-6> : tensor<f32>
  %4 = tessel.add %3, %eps : (tensor<2x3x1xf32>, tensor<f32>) -> tensor<2x3x1xf32>
  %5 = tessel.sqrt %4 : tensor<2x3x1xf32>
  %6 = tessel.div %1, %5 : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
  %7 = tessel.mul %6, %w : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  %8 = tessel.add %7, %b : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  return %8 : tensor<2x3x8xf32>
}

// Two normalised dims, d * d, rsqrt, operands swapped, no bias.
// CHECK-LABEL: func.func @two_dims_rsqrt_no_bias
// CHECK-NEXT: %[[N:.*]] = tessel.layer_norm %x, %w axis = 1 {epsilon = 1.000000e-03 : f32} : (tensor<4x3x8xf32>, tensor<3x8xf32>) -> tensor<4x3x8xf32>
// CHECK-NEXT: return %[[N]]
func.func @two_dims_rsqrt_no_bias(%x: tensor<4x3x8xf32>, %w: tensor<3x8xf32>) -> tensor<4x3x8xf32> {
  %0 = tessel.reduce_mean %x dims = [2, 1] keep_dims : (tensor<4x3x8xf32>) -> tensor<4x1x1xf32>
  %1 = tessel.sub %x, %0 : (tensor<4x3x8xf32>, tensor<4x1x1xf32>) -> tensor<4x3x8xf32>
  %2 = tessel.mul %1, %1 : (tensor<4x3x8xf32>, tensor<4x3x8xf32>) -> tensor<4x3x8xf32>
  %3 = tessel.reduce_mean %2 dims = [1, 2] keep_dims : (tensor<4x3x8xf32>) -> tensor<4x1x1xf32>
  %eps = tessel.constant dense<1.000000e-03> : tensor<f32>
  %4 = tessel.add %eps, %3 : (tensor<f32>, tensor<4x1x1xf32>) -> tensor<4x1x1xf32>
  %5 = tessel.rsqrt %4 : tensor<4x1x1xf32>
  %6 = tessel.mul %5, %1 : (tensor<4x1x1xf32>, tensor<4x3x8xf32>) -> tensor<4x3x8xf32>
  %7 = tessel.mul %w, %6 : (tensor<3x8xf32>, tensor<4x3x8xf32>) -> tensor<4x3x8xf32>
  return %7 : tensor<4x3x8xf32>
}

// Not a layer norm: the variance over other dims than the mean, a centred
// value read elsewhere (kept), a mean without keep_dims, a scale of the
// wrong shape.
// CHECK-LABEL: func.func @not_norms
// CHECK-NOT: tessel.layer_norm
// CHECK: return
func.func @not_norms(%x: tensor<4x8xf32>, %w: tensor<4x8xf32>, %v: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = tessel.reduce_mean %x dims = [1] keep_dims : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %1 = tessel.sub %x, %0 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %2 = tessel.mul %1, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = tessel.reduce_mean %2 dims = [0] keep_dims : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %eps = tessel.constant dense<1.000000e-05> : tensor<f32>
  %4 = tessel.add %3, %eps : (tensor<1x8xf32>, tensor<f32>) -> tensor<1x8xf32>
  %5 = tessel.sqrt %4 : tensor<1x8xf32>
  %6 = tessel.div %1, %5 : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  %7 = tessel.mul %6, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // The variance right, the scale of the whole input's shape.
  %8 = tessel.reduce_mean %2 dims = [1] keep_dims : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %9 = tessel.add %8, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %10 = tessel.sqrt %9 : tensor<4x1xf32>
  %11 = tessel.div %1, %10 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %12 = tessel.mul %11, %w : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %7, %12 : tensor<4x8xf32>, tensor<4x8xf32>
}

// The centred value has another reader: the norm is fused and the
// subtraction stays for it.
// CHECK-LABEL: func.func @shared_centre
// CHECK: %[[M:.*]] = tessel.reduce_mean %x
// CHECK-NEXT: %[[D:.*]] = tessel.sub %x, %[[M]]
// CHECK-NEXT: %[[N:.*]] = tessel.layer_norm %x, %w, %b axis = 1
// CHECK-NEXT: return %[[N]], %[[D]]
func.func @shared_centre(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = tessel.reduce_mean %x dims = [1] keep_dims : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %1 = tessel.sub %x, %0 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %two = tessel.constant dense<2.000000e+00> : tensor<f32>
  %2 = tessel.pow %1, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %3 = tessel.reduce_mean %2 dims = [1] keep_dims : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %eps = tessel.constant dense<1.000000e-05> : tensor<f32>
  %4 = tessel.add %3, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %5 = tessel.sqrt %4 : tensor<4x1xf32>
  %6 = tessel.div %1, %5 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %7 = tessel.mul %6, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %8 = tessel.add %b, %7 : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %8, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}
