// RUN: tessel-opt %s -split-input-file -tessel-mixed-precision | FileCheck %s
// RUN: tessel-opt %s -split-input-file -tessel-mixed-precision="precision=fp16" | FileCheck %s --check-prefix=F16
// RUN: not tessel-opt %s -split-input-file -tessel-mixed-precision="precision=fp8" 2>&1 | FileCheck %s --check-prefix=BAD

// A matmul becomes a half GEMM: its f32 operands cast to the format, its
// result of the format, widened once for its readers.
// CHECK-LABEL: func.func @matmul
// CHECK: %[[A:.*]] = tessel.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-NEXT: %[[B:.*]] = tessel.cast %w : tensor<8x16xf32> -> tensor<8x16xbf16>
// CHECK-NEXT: %[[M:.*]] = tessel.matmul %[[A]], %[[B]] : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
// CHECK-NEXT: %[[W:.*]] = tessel.cast %[[M]] : tensor<4x16xbf16> -> tensor<4x16xf32>
// CHECK-NEXT: tessel.exp %[[W]]
// F16-LABEL: func.func @matmul
// F16: tessel.matmul {{.*}} : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
// BAD: tessel-mixed-precision: unknown precision 'fp8' (bf16, fp16)
func.func @matmul(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %m = tessel.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %e = tessel.exp %m : tensor<4x16xf32>
  return %e : tensor<4x16xf32>
}

// -----

// A conv2d (no half kernels) reads its operands rounded in f32 storage and
// its result is rounded too.
// CHECK-LABEL: func.func @conv
// CHECK: %[[X:.*]] = tessel.round_float %x {exponent_bits = 8 : i64, mantissa_bits = 7 : i64}
// CHECK-NEXT: %[[W:.*]] = tessel.round_float %w {exponent_bits = 8 : i64, mantissa_bits = 7 : i64}
// CHECK-NEXT: %[[Y:.*]] = tessel.conv2d %[[X]], %[[W]]
// CHECK-NEXT: tessel.round_float %[[Y]] {exponent_bits = 8 : i64, mantissa_bits = 7 : i64}
func.func @conv(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %y = tessel.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return %y : tensor<1x4x8x8xf32>
}

// -----

// An attention reads q, kt and v cast to the format and its result is of
// the format (autocast's half scaled_dot_product_attention), widened for
// its readers; its mask and nan_fill stay f32, its lse is f32.
// CHECK-LABEL: func.func @attention
// CHECK: %[[Q:.*]] = tessel.cast %q : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[K:.*]] = tessel.cast %kt : tensor<2x8x4xf32> -> tensor<2x8x4xbf16>
// CHECK-NEXT: %[[V:.*]] = tessel.cast %v : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[O:.*]], %[[L:.*]] = tessel.attention %[[Q]], %[[K]], %[[V]] mask %m nan_fill %f {{.*}} : (tensor<2x4x8xbf16>, tensor<2x8x4xbf16>, tensor<2x4x8xbf16>, tensor<4x4xf32>, tensor<f32>) -> (tensor<2x4x8xbf16>, tensor<2x4xf32>)
// CHECK-NEXT: %[[W:.*]] = tessel.cast %[[O]] : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
// CHECK-NEXT: return %[[W]], %[[L]]
func.func @attention(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>, %m: tensor<4x4xf32>, %f: tensor<f32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>) {
  %o, %l = tessel.attention %q, %kt, %v mask %m nan_fill %f {scale = 0.5 : f32} : (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x8xf32>, tensor<4x4xf32>, tensor<f32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>)
  return %o, %l : tensor<2x4x8xf32>, tensor<2x4xf32>
}

// -----

// Ops already in a half (a half model's) are left as they are.
// CHECK-LABEL: func.func @half
// CHECK-NOT: tessel.cast
// CHECK: tessel.attention %q, %kt, %v : (tensor<2x4x8xbf16>
// CHECK-NOT: tessel.cast
func.func @half(%q: tensor<2x4x8xbf16>, %kt: tensor<2x8x4xbf16>, %v: tensor<2x4x8xbf16>) -> tensor<2x4x8xbf16> {
  %o, %l = tessel.attention %q, %kt, %v : (tensor<2x4x8xbf16>, tensor<2x8x4xbf16>, tensor<2x4x8xbf16>) -> (tensor<2x4x8xbf16>, tensor<2x4xf32>)
  return %o : tensor<2x4x8xbf16>
}
