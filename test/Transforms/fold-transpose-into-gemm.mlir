// RUN: tessel-opt %s -tessel-fold-transpose-into-gemm | FileCheck %s

// A tied head: x [B, S, d] @ transpose(W [V, d]) reads W in place; the rows
// merged and split back.
// CHECK-LABEL: func.func @tied_head
// CHECK-NEXT: %[[A:.*]] = tessel.reshape %x : (tensor<2x8x16xf32>) -> tensor<16x16xf32>
// CHECK-NEXT: %[[P:.*]] = tessel.gemm %[[A]], %w {trans_b} : (tensor<16x16xf32>, tensor<100x16xf32>) -> tensor<16x100xf32>
// CHECK-NEXT: %[[Y:.*]] = tessel.reshape %[[P]] : (tensor<16x100xf32>) -> tensor<2x8x100xf32>
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: tessel.transpose
func.func @tied_head(%x: tensor<2x8x16xf32>, %w: tensor<100x16xf32>) -> tensor<2x8x100xf32> {
  %t = tessel.transpose %w perm = [1, 0] : (tensor<100x16xf32>) -> tensor<16x100xf32>
  %y = tessel.matmul %x, %t : (tensor<2x8x16xf32>, tensor<16x100xf32>) -> tensor<2x8x100xf32>
  return %y : tensor<2x8x100xf32>
}

// Matrices need no reshape; a transpose another op reads stays for it.
// CHECK-LABEL: func.func @matrix_and_shared
// CHECK-NEXT: %[[T:.*]] = tessel.transpose %w perm = [1, 0]
// CHECK-NEXT: %[[P:.*]] = tessel.gemm %x, %w {trans_b} : (tensor<4x16xf32>, tensor<100x16xf32>) -> tensor<4x100xf32>
// CHECK-NEXT: return %[[P]], %[[T]]
func.func @matrix_and_shared(%x: tensor<4x16xf32>, %w: tensor<100x16xf32>) -> (tensor<4x100xf32>, tensor<16x100xf32>) {
  %t = tessel.transpose %w perm = [1, 0] : (tensor<100x16xf32>) -> tensor<16x100xf32>
  %y = tessel.matmul %x, %t : (tensor<4x16xf32>, tensor<16x100xf32>) -> tensor<4x100xf32>
  return %y, %t : tensor<4x100xf32>, tensor<16x100xf32>
}

// Not folded: a batched transpose (attention's keys), a transposed left
// operand.
// CHECK-LABEL: func.func @not_folded
// CHECK-NOT: tessel.gemm
// CHECK: return
func.func @not_folded(%q: tensor<2x8x16xf32>, %k: tensor<2x8x16xf32>, %w: tensor<16x4xf32>, %z: tensor<16x100xf32>) -> (tensor<2x8x8xf32>, tensor<4x100xf32>) {
  %kt = tessel.transpose %k perm = [0, 2, 1] : (tensor<2x8x16xf32>) -> tensor<2x16x8xf32>
  %s = tessel.matmul %q, %kt : (tensor<2x8x16xf32>, tensor<2x16x8xf32>) -> tensor<2x8x8xf32>
  %wt = tessel.transpose %w perm = [1, 0] : (tensor<16x4xf32>) -> tensor<4x16xf32>
  %y = tessel.matmul %wt, %z : (tensor<4x16xf32>, tensor<16x100xf32>) -> tensor<4x100xf32>
  return %s, %y : tensor<2x8x8xf32>, tensor<4x100xf32>
}

// The tied head's backward: dx reads the transposed table again (the flag
// flips), and dW is computed [d, V] and transposed (the gemm of its operands
// swapped, both flags flipped).
// CHECK-LABEL: func.func @tied_head_backward
// CHECK-NEXT: %[[DX:.*]] = tessel.gemm %dy, %w : (tensor<16x100xf32>, tensor<100x16xf32>) -> tensor<16x16xf32>
// CHECK-NEXT: %[[DW:.*]] = tessel.gemm %dy, %x {trans_a} : (tensor<16x100xf32>, tensor<16x16xf32>) -> tensor<100x16xf32>
// CHECK-NEXT: return %[[DX]], %[[DW]]
func.func @tied_head_backward(%x: tensor<16x16xf32>, %w: tensor<100x16xf32>, %dy: tensor<16x100xf32>) -> (tensor<16x16xf32>, tensor<100x16xf32>) {
  %t = tessel.transpose %w perm = [1, 0] : (tensor<100x16xf32>) -> tensor<16x100xf32>
  %dx = tessel.gemm %dy, %t {trans_b} : (tensor<16x100xf32>, tensor<16x100xf32>) -> tensor<16x16xf32>
  %g = tessel.gemm %x, %dy {trans_a} : (tensor<16x16xf32>, tensor<16x100xf32>) -> tensor<16x100xf32>
  %dw = tessel.transpose %g perm = [1, 0] : (tensor<16x100xf32>) -> tensor<100x16xf32>
  return %dx, %dw : tensor<16x16xf32>, tensor<100x16xf32>
}

// Not folded: a transposed gemm with a bias (its transpose would be
// needed), or whose product another op also reads.
// CHECK-LABEL: func.func @transposed_gemm_kept
// CHECK: tessel.transpose %[[G:.*]] perm = [1, 0]
// CHECK: tessel.transpose
// CHECK: return
func.func @transposed_gemm_kept(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>, %c: tensor<8xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>) {
  %g = tessel.gemm %x, %w, %c : (tensor<4x16xf32>, tensor<16x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %t = tessel.transpose %g perm = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %h = tessel.gemm %x, %w : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %u = tessel.transpose %h perm = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %t, %u, %h : tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>
}

// --precision bf16: the table is cast after the exporter's transpose, and
// the weight gradient widened before its transpose. The casts move to the
// far side (a transpose and a cast commute), then the transposes fold: no
// copy of the table, in either direction.
// CHECK-LABEL: func.func @tied_head_bf16
// CHECK-NEXT: %[[W16:.*]] = tessel.cast %w : tensor<100x16xf32> -> tensor<100x16xbf16>
// CHECK-NEXT: %[[G:.*]] = tessel.gemm %x, %[[W16]] {trans_b} : (tensor<4x16xbf16>, tensor<100x16xbf16>) -> tensor<4x100xbf16>
// CHECK-NEXT: %[[D:.*]] = tessel.gemm %dy, %x {trans_a} : (tensor<4x100xbf16>, tensor<4x16xbf16>) -> tensor<100x16xbf16>
// CHECK-NEXT: %[[DW:.*]] = tessel.cast %[[D]] : tensor<100x16xbf16> -> tensor<100x16xf32>
// CHECK-NEXT: return %[[G]], %[[DW]]
func.func @tied_head_bf16(%x: tensor<4x16xbf16>, %w: tensor<100x16xf32>, %dy: tensor<4x100xbf16>) -> (tensor<4x100xbf16>, tensor<100x16xf32>) {
  %t = tessel.transpose %w perm = [1, 0] : (tensor<100x16xf32>) -> tensor<16x100xf32>
  %t16 = tessel.cast %t : tensor<16x100xf32> -> tensor<16x100xbf16>
  %y = tessel.matmul %x, %t16 : (tensor<4x16xbf16>, tensor<16x100xbf16>) -> tensor<4x100xbf16>
  %dwt = tessel.gemm %x, %dy {trans_a} : (tensor<4x16xbf16>, tensor<4x100xbf16>) -> tensor<16x100xbf16>
  %dwt32 = tessel.cast %dwt : tensor<16x100xbf16> -> tensor<16x100xf32>
  %dw = tessel.transpose %dwt32 perm = [1, 0] : (tensor<16x100xf32>) -> tensor<100x16xf32>
  return %y, %dw : tensor<4x100xbf16>, tensor<100x16xf32>
}

// Kept: a transpose another op reads too (moving the cast would copy it
// twice), and a cast of a transpose that no GEMM reads.
// CHECK-LABEL: func.func @casts_kept
// CHECK: %[[T:.*]] = tessel.transpose %w
// CHECK-NEXT: tessel.cast %[[T]]
// CHECK: tessel.matmul
// CHECK: %[[U:.*]] = tessel.transpose %v
// CHECK-NEXT: tessel.cast %[[U]]
func.func @casts_kept(%x: tensor<4x16xbf16>, %w: tensor<100x16xf32>, %v: tensor<8x4xf32>) -> (tensor<4x100xbf16>, tensor<16x100xf32>, tensor<4x8xbf16>) {
  %t = tessel.transpose %w perm = [1, 0] : (tensor<100x16xf32>) -> tensor<16x100xf32>
  %t16 = tessel.cast %t : tensor<16x100xf32> -> tensor<16x100xbf16>
  %y = tessel.matmul %x, %t16 : (tensor<4x16xbf16>, tensor<16x100xbf16>) -> tensor<4x100xbf16>
  %u = tessel.transpose %v perm = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %u16 = tessel.cast %u : tensor<4x8xf32> -> tensor<4x8xbf16>
  return %y, %t, %u16 : tensor<4x100xbf16>, tensor<16x100xf32>, tensor<4x8xbf16>
}
