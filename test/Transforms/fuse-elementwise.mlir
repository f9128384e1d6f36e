// RUN: tessel-opt %s -tessel-fuse-elementwise | FileCheck %s

tessel.mesh @mesh ["tp"=2]

// SiLU(gate) * up, as the exporters write Llama's MLP: x is read twice (an
// input may be), the sigmoid and the first product once each.
// CHECK-LABEL: func.func @silu_gate
// CHECK-NEXT: %[[F:.*]] = tessel.fused_elementwise %g, %u {args = array<i64: 0, -1, 0, 0, 2, 0, 3, 1, 0>, ops = ["sigmoid", "mul", "mul"]} : (tensor<2x64xf32>, tensor<2x64xf32>) -> tensor<2x64xf32>
// CHECK-NEXT: return %[[F]]
func.func @silu_gate(%g: tensor<2x64xf32>, %u: tensor<2x64xf32>) -> tensor<2x64xf32> {
  %s = tessel.sigmoid %g : tensor<2x64xf32>
  %m = tessel.mul %g, %s : (tensor<2x64xf32>, tensor<2x64xf32>) -> tensor<2x64xf32>
  %y = tessel.mul %m, %u : (tensor<2x64xf32>, tensor<2x64xf32>) -> tensor<2x64xf32>
  return %y : tensor<2x64xf32>
}

// A bias [64] broadcast over the rows, GELU's tanh form, a scalar scale.
// CHECK-LABEL: func.func @bias_gelu
// CHECK-NEXT: %[[C:.*]] = tessel.constant
// CHECK-NEXT: %[[F:.*]] = tessel.fused_elementwise %x, %b, %[[C]] {args = array<i64: 0, 1, 0, 3, -1, 1, 4, 2, 0>, ops = ["add", "gelu", "mul"]}
// CHECK-NEXT: return %[[F]]
func.func @bias_gelu(%x: tensor<8x64xf32>, %b: tensor<64xf32>) -> tensor<8x64xf32> {
  %c = tessel.constant dense<0.5> : tensor<f32>
  %0 = tessel.add %x, %b : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
  %1 = tessel.gelu %0 {tanh_approximation} : tensor<8x64xf32>
  %2 = tessel.mul %1, %c : (tensor<8x64xf32>, tensor<f32>) -> tensor<8x64xf32>
  return %2 : tensor<8x64xf32>
}

// Not folded: a value read twice (%0 stays, two trees read it), an
// operand that broadcasts along a middle dim, integers, a lone op.
// CHECK-LABEL: func.func @kept
// CHECK: %[[E:.*]] = tessel.exp %x
// CHECK: tessel.fused_elementwise %[[E]], %y
// CHECK: tessel.fused_elementwise %[[E]], %y
// CHECK: tessel.add %x, %m : (tensor<4x3x8xf32>, tensor<4x1x8xf32>)
// CHECK: tessel.add %i, %i : (tensor<4xi64>, tensor<4xi64>)
// CHECK: tessel.neg %x
func.func @kept(%x: tensor<4x3x8xf32>, %y: tensor<4x3x8xf32>, %m: tensor<4x1x8xf32>, %i: tensor<4xi64>) -> (tensor<4x3x8xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>, tensor<4xi64>, tensor<4x3x8xf32>) {
  %0 = tessel.exp %x : tensor<4x3x8xf32>
  %1 = tessel.add %0, %y : (tensor<4x3x8xf32>, tensor<4x3x8xf32>) -> tensor<4x3x8xf32>
  %2 = tessel.tanh %1 : tensor<4x3x8xf32>
  %3 = tessel.sub %0, %y : (tensor<4x3x8xf32>, tensor<4x3x8xf32>) -> tensor<4x3x8xf32>
  %4 = tessel.abs %3 : tensor<4x3x8xf32>
  %5 = tessel.add %x, %m : (tensor<4x3x8xf32>, tensor<4x1x8xf32>) -> tensor<4x3x8xf32>
  %6 = tessel.add %i, %i : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %7 = tessel.neg %x : tensor<4x3x8xf32>
  return %2, %4, %5, %6, %7 : tensor<4x3x8xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>, tensor<4xi64>, tensor<4x3x8xf32>
}

// An op that may write memory between a producer and its reader keeps
// them apart: the all_reduce's result is in place of its operand.
// CHECK-LABEL: func.func @barrier
// CHECK: %[[A:.*]] = tessel.exp %x
// CHECK: tessel.all_reduce
// CHECK: tessel.add %[[A]], %{{.*}}
func.func @barrier(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = tessel.exp %x : tensor<4xf32>
  %r = tessel.all_reduce sum %y on @mesh axes = ["tp"] : tensor<4xf32>
  %b = tessel.add %a, %r : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %b, %r : tensor<4xf32>, tensor<4xf32>
}

// A bf16 model after -tessel-float-normalization: each op reads its halves
// through casts to f32 and rounds its result back. The chain reads %h and
// %r as bf16 and writes bf16; the inner cast pair stays (it rounds). %w is
// widened once for two readers: each tree that reads it gets the cast (a
// load of the half in the kernel), and the cast stays for the matmul,
// which is no tree's. The bias [64] is read as bf16 too.
// CHECK-LABEL: func.func @bf16_chain
// CHECK-NEXT: %[[W:.*]] = tessel.cast %w : tensor<2x64xbf16> -> tensor<2x64xf32>
// CHECK-NEXT: %[[F:.*]] = tessel.fused_elementwise %h, %b, %w, %r {args = array<i64: 0, -1, 0, 1, -1, 0, 2, -1, 0, 4, 5, 0, 7, -1, 1, 8, -1, 0, 9, -1, 0, 10, 6, 0, 11, -1, 1, 12, -1, 0, 3, -1, 0, 13, 14, 0, 15, -1, 1>, ops = ["cast", "cast", "cast", "add", "cast", "cast", "sigmoid", "mul", "cast", "cast", "cast", "add", "cast"]} : (tensor<2x64xbf16>, tensor<64xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>) -> tensor<2x64xbf16>
// CHECK-NEXT: %[[M:.*]] = tessel.matmul %[[W]], %t
// CHECK-NEXT: return %[[F]], %[[M]]
func.func @bf16_chain(%h: tensor<2x64xbf16>, %b: tensor<64xbf16>, %w: tensor<2x64xbf16>, %r: tensor<2x64xbf16>, %t: tensor<64x8xf32>) -> (tensor<2x64xbf16>, tensor<2x8xf32>) {
  %0 = tessel.cast %h : tensor<2x64xbf16> -> tensor<2x64xf32>
  %1 = tessel.cast %b : tensor<64xbf16> -> tensor<64xf32>
  %w32 = tessel.cast %w : tensor<2x64xbf16> -> tensor<2x64xf32>
  %2 = tessel.add %0, %1 : (tensor<2x64xf32>, tensor<64xf32>) -> tensor<2x64xf32>
  %3 = tessel.cast %2 : tensor<2x64xf32> -> tensor<2x64xbf16>
  %4 = tessel.cast %3 : tensor<2x64xbf16> -> tensor<2x64xf32>
  %5 = tessel.sigmoid %4 : tensor<2x64xf32>
  %6 = tessel.mul %5, %w32 : (tensor<2x64xf32>, tensor<2x64xf32>) -> tensor<2x64xf32>
  %7 = tessel.cast %6 : tensor<2x64xf32> -> tensor<2x64xbf16>
  %8 = tessel.cast %7 : tensor<2x64xbf16> -> tensor<2x64xf32>
  %9 = tessel.cast %r : tensor<2x64xbf16> -> tensor<2x64xf32>
  %10 = tessel.add %8, %9 : (tensor<2x64xf32>, tensor<2x64xf32>) -> tensor<2x64xf32>
  %11 = tessel.cast %10 : tensor<2x64xf32> -> tensor<2x64xbf16>
  %m = tessel.matmul %w32, %t : (tensor<2x64xf32>, tensor<64x8xf32>) -> tensor<2x8xf32>
  return %11, %m : tensor<2x64xbf16>, tensor<2x8xf32>
}

// --precision bf16 / fp16 (-tessel-mixed-precision) rounds a GEMM's result
// with round_float: below a tree's root it is a cast to the half and back
// (the same rounding). A round_float that a GEMM reads, or that is a
// tree's root, stays: -tessel-mark-bf16-operands and the CPU's bf16 copies
// read it; one of another format stays too.
// CHECK-LABEL: func.func @rounded
// CHECK-NEXT: %[[Q:.*]] = tessel.round_float %y {exponent_bits = 8 : i64, mantissa_bits = 7 : i64}
// CHECK-NEXT: %[[F:.*]] = tessel.fused_elementwise %x, %z, %b {args = array<i64: 0, -1, 1, 3, -1, 0, 1, -1, 2, 5, -1, 0, 4, 2, 0, 7, 6, 0, 8, -1, 0>, ops = ["cast", "cast", "cast", "cast", "add", "mul", "tanh"]}
// CHECK-NEXT: %[[E:.*]] = tessel.round_float %[[F]] {exponent_bits = 8 : i64, mantissa_bits = 7 : i64}
// CHECK-NEXT: %[[O:.*]] = tessel.round_float %x {exponent_bits = 4 : i64, mantissa_bits = 3 : i64}
// CHECK-NEXT: %[[N:.*]] = tessel.neg %[[O]]
// CHECK-NEXT: %[[M:.*]] = tessel.matmul %[[E]], %[[Q]]
func.func @rounded(%x: tensor<8x8xf32>, %b: tensor<8xf32>, %y: tensor<8x8xf32>, %z: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %r = tessel.round_float %x {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<8x8xf32>
  %q = tessel.round_float %y {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<8x8xf32>
  %h = tessel.round_float %z {exponent_bits = 5 : i64, mantissa_bits = 10 : i64} : tensor<8x8xf32>
  %0 = tessel.add %r, %b : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  %1 = tessel.mul %0, %h : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %2 = tessel.tanh %1 : tensor<8x8xf32>
  %e = tessel.round_float %2 {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<8x8xf32>
  %o = tessel.round_float %x {exponent_bits = 4 : i64, mantissa_bits = 3 : i64} : tensor<8x8xf32>
  %n = tessel.neg %o : tensor<8x8xf32>
  %m = tessel.matmul %e, %q : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %m, %n : tensor<8x8xf32>, tensor<8x8xf32>
}

// A half GEMM's result widened for a reader far away (a tied table's
// gradient, summed with the embedding's a whole backward later): nothing
// writes a GEMM's result while it is live, so the cast joins the reader's
// tree across ops that may write memory; a widened argument does not.
// CHECK-LABEL: func.func @far_gemm_result
// CHECK: %[[G:.*]] = tessel.gemm
// CHECK-NEXT: %[[A:.*]] = tessel.cast %h
// CHECK-NEXT: tessel.all_reduce
// CHECK-NEXT: %[[F:.*]] = tessel.fused_elementwise %[[G]], %e, %[[A]] {{.*}}ops = ["cast", "add", "add"]
func.func @far_gemm_result(%x: tensor<4x8xbf16>, %dy: tensor<4x16xbf16>, %e: tensor<8x16xf32>, %h: tensor<8x16xbf16>, %y: tensor<4xf32>) -> (tensor<8x16xf32>, tensor<4xf32>) {
  %g = tessel.gemm %x, %dy {trans_a} : (tensor<4x8xbf16>, tensor<4x16xbf16>) -> tensor<8x16xbf16>
  %g32 = tessel.cast %g : tensor<8x16xbf16> -> tensor<8x16xf32>
  %h32 = tessel.cast %h : tensor<8x16xbf16> -> tensor<8x16xf32>
  %r = tessel.all_reduce sum %y on @mesh axes = ["tp"] : tensor<4xf32>
  %s = tessel.add %g32, %e : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %t = tessel.add %s, %h32 : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %t, %r : tensor<8x16xf32>, tensor<4xf32>
}
