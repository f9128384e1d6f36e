// RUN: tessel-opt %s -split-input-file -tessel-fold-merged-transpose | FileCheck %s

// PyTorch's default export of attention's key transpose: merge batch and
// heads, swap the last two dims, split them again. One transpose.
// CHECK-LABEL: func.func @keys
// CHECK-NEXT: %[[T:.*]] = tessel.transpose %x perm = [0, 1, 3, 2] : (tensor<2x4x16x8xf32>) -> tensor<2x4x8x16xf32>
// CHECK-NEXT: return %[[T]]
func.func @keys(%x: tensor<2x4x16x8xf32>) -> tensor<2x4x8x16xf32> {
  %y = tessel.reshape %x : (tensor<2x4x16x8xf32>) -> tensor<8x16x8xf32>
  %z = tessel.transpose %y perm = [0, 2, 1] : (tensor<8x16x8xf32>) -> tensor<8x8x16xf32>
  %w = tessel.reshape %z : (tensor<8x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %w : tensor<2x4x8x16xf32>
}

// -----

// Grouped-query attention: the key heads repeated ([b, kvh, rep]) are split
// back as [b, h]: the transpose, then the reshape to the result's shape.
// CHECK-LABEL: func.func @gqa
// CHECK-NEXT: %[[T:.*]] = tessel.transpose %x perm = [0, 1, 2, 4, 3] : (tensor<2x2x2x16x8xf32>) -> tensor<2x2x2x8x16xf32>
// CHECK-NEXT: %[[R:.*]] = tessel.reshape %[[T]] : (tensor<2x2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
// CHECK-NEXT: return %[[R]]
func.func @gqa(%x: tensor<2x2x2x16x8xf32>) -> tensor<2x4x8x16xf32> {
  %y = tessel.reshape %x : (tensor<2x2x2x16x8xf32>) -> tensor<8x16x8xf32>
  %z = tessel.transpose %y perm = [0, 2, 1] : (tensor<8x16x8xf32>) -> tensor<8x8x16xf32>
  %w = tessel.reshape %z : (tensor<8x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %w : tensor<2x4x8x16xf32>
}

// -----

// Not folded: a merge that reaches into the last two dims, a transpose of
// other dims, a merged value read elsewhere too.
// CHECK-LABEL: func.func @kept
// CHECK: tessel.reshape %x : (tensor<2x4x16x8xf32>) -> tensor<2x64x8xf32>
// CHECK: tessel.transpose {{.*}} perm = [0, 2, 1]
// CHECK: tessel.transpose {{.*}} perm = [1, 0, 2]
// CHECK: tessel.transpose {{.*}} perm = [0, 2, 1]
func.func @kept(%x: tensor<2x4x16x8xf32>, %v: tensor<8x16x8xf32>) -> (tensor<2x8x64xf32>, tensor<16x8x8xf32>, tensor<8x8x16xf32>, tensor<2x4x8x16xf32>) {
  %y = tessel.reshape %x : (tensor<2x4x16x8xf32>) -> tensor<2x64x8xf32>
  %z = tessel.transpose %y perm = [0, 2, 1] : (tensor<2x64x8xf32>) -> tensor<2x8x64xf32>
  %a = tessel.transpose %v perm = [1, 0, 2] : (tensor<8x16x8xf32>) -> tensor<16x8x8xf32>
  %m = tessel.reshape %x : (tensor<2x4x16x8xf32>) -> tensor<8x16x8xf32>
  %t = tessel.transpose %m perm = [0, 2, 1] : (tensor<8x16x8xf32>) -> tensor<8x8x16xf32>
  %w = tessel.reshape %t : (tensor<8x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %z, %a, %t, %w : tensor<2x8x64xf32>, tensor<16x8x8xf32>, tensor<8x8x16xf32>, tensor<2x4x8x16xf32>
}
