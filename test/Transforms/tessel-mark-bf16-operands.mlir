// RUN: tessel-opt %s -split-input-file -tessel-mark-bf16-operands | FileCheck %s

// Both operands rounded to bf16: marked.
// CHECK-LABEL: func.func @rounded
// CHECK: tessel.matmul %{{.*}}, %{{.*}} {bf16_operands}
func.func @rounded(%x: tensor<8x64xf32>, %w: tensor<64x32xf32>) -> tensor<8x32xf32> {
  %a = tessel.round_float %x {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<8x64xf32>
  %b = tessel.round_float %w {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<64x32xf32>
  %y = tessel.matmul %a, %b : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// Through ops that only move values (the backward's transposes and
// reshapes), and a narrower format (fp8 e5m2 values are bf16 values).
// CHECK-LABEL: func.func @moved
// CHECK: tessel.gemm %{{.*}}, %{{.*}} {bf16_operands, trans_b}
func.func @moved(%x: tensor<8x4x64xf32>, %w: tensor<64x32xf32>) -> tensor<32x32xf32> {
  %a = tessel.round_float %x {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<8x4x64xf32>
  %r = tessel.reshape %a : (tensor<8x4x64xf32>) -> tensor<32x64xf32>
  %b = tessel.round_float %w {exponent_bits = 5 : i64, mantissa_bits = 2 : i64} : tensor<64x32xf32>
  %t = tessel.transpose %b perm = [1, 0] : (tensor<64x32xf32>) -> tensor<32x64xf32>
  %y = tessel.gemm %r, %t {trans_b} : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x32xf32>
  return %y : tensor<32x32xf32>
}

// -----

// A gemm's c is added in f32: it need not be a bf16 value.
// CHECK-LABEL: func.func @bias
// CHECK: tessel.gemm %{{.*}}, %{{.*}}, %{{.*}} {bf16_operands}
func.func @bias(%x: tensor<8x64xf32>, %w: tensor<64x32xf32>, %c: tensor<32xf32>) -> tensor<8x32xf32> {
  %a = tessel.round_float %x {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<8x64xf32>
  %b = tessel.round_float %w {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<64x32xf32>
  %y = tessel.gemm %a, %b, %c : (tensor<8x64xf32>, tensor<64x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// A constant of bf16 values counts; one with more mantissa bits does not.
// CHECK-LABEL: func.func @constants
// CHECK: tessel.matmul %{{.*}}, %{{.*}} {bf16_operands}
// CHECK: tessel.matmul %{{.*}}, %{{.*}} :
func.func @constants(%x: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %a = tessel.round_float %x {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<2x2xf32>
  %half = tessel.constant dense<[[0.5, 1.0], [2.0, -3.0]]> : tensor<2x2xf32>
  %third = tessel.constant dense<0.333333343> : tensor<2x2xf32>
  %y = tessel.matmul %a, %half : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %z = tessel.matmul %a, %third : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %y, %z : tensor<2x2xf32>, tensor<2x2xf32>
}

// -----

// Not marked: an operand that is not rounded, one rounded to fp16 (10
// mantissa bits), one computed from rounded values.
// CHECK-LABEL: func.func @unmarked
// CHECK-NOT: bf16_operands
func.func @unmarked(%x: tensor<8x64xf32>, %w: tensor<64x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>) {
  %a = tessel.round_float %x {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<8x64xf32>
  %y = tessel.matmul %a, %w : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %h = tessel.round_float %w {exponent_bits = 5 : i64, mantissa_bits = 10 : i64} : tensor<64x32xf32>
  %z = tessel.matmul %a, %h : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %b = tessel.round_float %w {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<64x32xf32>
  %s = tessel.add %b, %b : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  %u = tessel.matmul %a, %s : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  return %y, %z, %u : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// Convolutions: conv2d reads input and weight (its bias is added in f32),
// conv2d_backward_data grad and weight, conv2d_backward_weight input and
// grad. The last conv2d's weight is not rounded: unmarked.
// CHECK-LABEL: func.func @convolutions
// CHECK: tessel.conv2d %{{.*}}, %{{.*}}, %{{.*}} {bf16_operands
// CHECK: tessel.conv2d_backward_data %{{.*}}, %{{.*}} {bf16_operands
// CHECK: tessel.conv2d_backward_weight %{{.*}}, %{{.*}} {bf16_operands
// CHECK: tessel.conv2d %{{.*}}, %{{.*}} {pads
// CHECK-NOT: bf16_operands
func.func @convolutions(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>, %dy: tensor<2x4x8x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<2x4x8x8xf32>) {
  %rx = tessel.round_float %x {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<2x3x8x8xf32>
  %rw = tessel.round_float %w {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<4x3x3x3xf32>
  %rdy = tessel.round_float %dy {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<2x4x8x8xf32>
  %y = tessel.conv2d %rx, %rw, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %dx = tessel.conv2d_backward_data %rdy, %rw {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  %dw = tessel.conv2d_backward_weight %rx, %rdy {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x3x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<4x3x3x3xf32>
  %z = tessel.conv2d %rx, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32>
  return %y, %dx, %dw, %z : tensor<2x4x8x8xf32>, tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<2x4x8x8xf32>
}

// -----

// A bf16 model's operands, widened by -tessel-float-normalization: marked.
// f16 values are not all bf16 values (10 mantissa bits): not marked.
// CHECK-LABEL: func.func @widened
// CHECK: tessel.matmul %{{.*}}, %{{.*}} {bf16_operands}
// CHECK: tessel.matmul %{{.*}}, %{{.*}} :
func.func @widened(%x: tensor<8x64xbf16>, %w: tensor<64x32xbf16>, %h: tensor<64x32xf16>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %a = tessel.cast %x : tensor<8x64xbf16> -> tensor<8x64xf32>
  %b = tessel.cast %w : tensor<64x32xbf16> -> tensor<64x32xf32>
  %c = tessel.cast %h : tensor<64x32xf16> -> tensor<64x32xf32>
  %y = tessel.matmul %a, %b : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %z = tessel.matmul %a, %c : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  return %y, %z : tensor<8x32xf32>, tensor<8x32xf32>
}
