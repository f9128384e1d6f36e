// RUN: tessel-opt %s -tessel-split-bias | FileCheck %s

// CHECK-LABEL: func.func @gemm
// CHECK-SAME: (%[[X:.*]]: tensor<8x64xf32>, %[[W:.*]]: tensor<10x64xf32>, %[[B:.*]]: tensor<10xf32>)
// CHECK-NEXT: %[[P:.*]] = tessel.gemm %[[X]], %[[W]] {alpha = 2.000000e+00 : f32, trans_b} : (tensor<8x64xf32>, tensor<10x64xf32>) -> tensor<8x10xf32>
// CHECK-NEXT: %[[Y:.*]] = tessel.add %[[P]], %[[B]] : (tensor<8x10xf32>, tensor<10xf32>) -> tensor<8x10xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gemm(%x: tensor<8x64xf32>, %w: tensor<10x64xf32>, %b: tensor<10xf32>) -> tensor<8x10xf32> {
  %y = tessel.gemm %x, %w, %b {trans_b, alpha = 2.0 : f32} : (tensor<8x64xf32>, tensor<10x64xf32>, tensor<10xf32>) -> tensor<8x10xf32>
  return %y : tensor<8x10xf32>
}

// beta scales the bias.
// CHECK-LABEL: func.func @gemm_beta
// CHECK: %[[P:.*]] = tessel.gemm %{{.*}}, %{{.*}} : (tensor<8x64xf32>, tensor<64x10xf32>) -> tensor<8x10xf32>
// CHECK: %[[BETA:.*]] = tessel.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[C:.*]] = tessel.mul %{{.*}}, %[[BETA]] : (tensor<8x10xf32>, tensor<f32>) -> tensor<8x10xf32>
// CHECK: tessel.add %[[P]], %[[C]]
func.func @gemm_beta(%x: tensor<8x64xf32>, %w: tensor<64x10xf32>, %c: tensor<8x10xf32>) -> tensor<8x10xf32> {
  %y = tessel.gemm %x, %w, %c {beta = 0.5 : f32} : (tensor<8x64xf32>, tensor<64x10xf32>, tensor<8x10xf32>) -> tensor<8x10xf32>
  return %y : tensor<8x10xf32>
}

// CHECK-LABEL: func.func @conv
// CHECK: %[[P:.*]] = tessel.conv2d %{{.*}}, %{{.*}} {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32>
// CHECK: %[[B:.*]] = tessel.reshape %{{.*}} : (tensor<4xf32>) -> tensor<4x1x1xf32>
// CHECK: tessel.add %[[P]], %[[B]] : (tensor<2x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<2x4x8x8xf32>
func.func @conv(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<2x4x8x8xf32> {
  %y = tessel.conv2d %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  return %y : tensor<2x4x8x8xf32>
}

// Without a bias nothing changes.
// CHECK-LABEL: func.func @no_bias
// CHECK-NEXT: tessel.gemm
// CHECK-NEXT: return
func.func @no_bias(%x: tensor<8x64xf32>, %w: tensor<64x10xf32>) -> tensor<8x10xf32> {
  %y = tessel.gemm %x, %w : (tensor<8x64xf32>, tensor<64x10xf32>) -> tensor<8x10xf32>
  return %y : tensor<8x10xf32>
}
