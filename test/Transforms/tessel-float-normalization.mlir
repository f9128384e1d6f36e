// RUN: tessel-opt %s -split-input-file -tessel-float-normalization | FileCheck %s

// Arithmetic on bf16 reads f32 copies and rounds its result back once; a
// half read twice is widened once; a sum over ranks adds in f32; moving
// and comparing values read what they read. A GEMM of one half type
// throughout stays half (the runtimes' half GEMMs: f32 sums, rounded once).
// CHECK-LABEL: func.func @ops
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xbf16>, %[[W:.*]]: tensor<8x8xbf16>, %[[B:.*]]: tensor<8xbf16>)
// CHECK: %[[MH:.*]] = tessel.matmul %[[X]], %[[W]] : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
// CHECK-NEXT: %[[MW:.*]] = tessel.cast %[[MH]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK-NEXT: %[[R:.*]] = tessel.all_reduce sum %[[MW]] on @mesh axes = ["tp"] : tensor<4x8xf32>
// CHECK-NEXT: %[[RH:.*]] = tessel.cast %[[R]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-NEXT: %[[X32:.*]] = tessel.cast %[[X]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK-NEXT: %[[RW:.*]] = tessel.cast %[[RH]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK-NEXT: tessel.compare lt, %[[X32]], %[[RW]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
// CHECK-NEXT: %[[S:.*]] = tessel.slice %[[RH]] [0:2:1, 0:8:1] : (tensor<4x8xbf16>) -> tensor<2x8xbf16>
// CHECK-NEXT: %[[G:.*]] = tessel.gemm %[[X]], %[[W]], %[[B]] {trans_b} : (tensor<4x8xbf16>, tensor<8x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
// CHECK-NEXT: return %[[RH]], %{{.*}}, %[[S]], %[[G]]
module {
  tessel.mesh @mesh ["tp"=2]
  func.func @ops(%x: tensor<4x8xbf16>, %w: tensor<8x8xbf16>, %b: tensor<8xbf16>) -> (tensor<4x8xbf16>, tensor<4x8xi1>, tensor<2x8xbf16>, tensor<4x8xbf16>) {
    %m = tessel.matmul %x, %w : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
    %r = tessel.all_reduce sum %m on @mesh axes = ["tp"] : tensor<4x8xbf16>
    %c = tessel.compare lt, %x, %r : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xi1>
    %s = tessel.slice %r [0:2:1, 0:8:1] : (tensor<4x8xbf16>) -> tensor<2x8xbf16>
    %g = tessel.gemm %x, %w, %b {trans_b} : (tensor<4x8xbf16>, tensor<8x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
    return %r, %c, %s, %g : tensor<4x8xbf16>, tensor<4x8xi1>, tensor<2x8xbf16>, tensor<4x8xbf16>
  }
}

// -----

// f16 likewise; a cast from a half to f32 (the model's own upcast, as
// Llama's RMSNorm writes it) is left alone, and f32 ops are untouched.
// CHECK-LABEL: func.func @f16
// CHECK: %[[U:.*]] = tessel.cast %{{.*}} : tensor<4xf16> -> tensor<4xf32>
// CHECK-NEXT: %[[E:.*]] = tessel.exp %[[U]] : tensor<4xf32>
// CHECK-NEXT: %[[D:.*]] = tessel.cast %[[E]] : tensor<4xf32> -> tensor<4xf16>
// CHECK-NEXT: %[[DW:.*]] = tessel.cast %[[D]] : tensor<4xf16> -> tensor<4xf32>
// CHECK-NEXT: %[[N:.*]] = tessel.neg %[[DW]] : tensor<4xf32>
// CHECK-NEXT: tessel.cast %[[N]] : tensor<4xf32> -> tensor<4xf16>
// CHECK-NOT: tessel.cast
func.func @f16(%x: tensor<4xf16>) -> tensor<4xf16> {
  %u = tessel.cast %x : tensor<4xf16> -> tensor<4xf32>
  %e = tessel.exp %u : tensor<4xf32>
  %d = tessel.cast %e : tensor<4xf32> -> tensor<4xf16>
  %n = tessel.neg %d : tensor<4xf16>
  return %n : tensor<4xf16>
}

// -----

// The f32 copy is made just before the first reader, not at the value's
// definition: an async gather's result is not waited for any earlier.
// CHECK-LABEL: func.func @late
// CHECK: %[[G:.*]] = tessel.all_gather
// CHECK-NEXT: tessel.transpose %[[G]]
// CHECK-NEXT: %[[GW:.*]] = tessel.cast %[[G]] : tensor<4x4xbf16> -> tensor<4x4xf32>
// CHECK-NEXT: tessel.exp %[[GW]] : tensor<4x4xf32>
module {
  tessel.mesh @mesh ["dp"=2]
  func.func @late(%w: tensor<2x4xbf16>) -> (tensor<4x4xbf16>, tensor<4x4xbf16>) {
    %g = tessel.all_gather %w on @mesh axes = ["dp"] dim = 0 : (tensor<2x4xbf16>) -> tensor<4x4xbf16>
    %t = tessel.transpose %g perm = [1, 0] : (tensor<4x4xbf16>) -> tensor<4x4xbf16>
    %e = tessel.exp %g : tensor<4x4xbf16>
    return %t, %e : tensor<4x4xbf16>, tensor<4x4xbf16>
  }
}

// -----

// A half attention stays half (f32 sums, each result rounded once): its
// half mask and nan_fill are widened (once for both), lse is f32.
// CHECK-LABEL: func.func @attention
// CHECK: %[[M:.*]] = tessel.cast %{{.*}} : tensor<1x1x4x4xbf16> -> tensor<1x1x4x4xf32>
// CHECK-NEXT: %[[F:.*]] = tessel.cast %{{.*}} : tensor<bf16> -> tensor<f32>
// CHECK-NEXT: %{{.*}}, %{{.*}} = tessel.attention %{{.*}}, %{{.*}}, %{{.*}} mask %[[M]] nan_fill %[[F]] {{.*}} -> (tensor<2x2x4x8xbf16>, tensor<2x2x4xf32>)
// CHECK-NEXT: %{{.*}}, %{{.*}}, %{{.*}} = tessel.attention_grad {{.*}} mask %[[M]] nan_fill %[[F]] {{.*}} -> (tensor<2x2x4x8xbf16>, tensor<2x2x8x4xbf16>, tensor<2x2x4x8xbf16>)
// CHECK-NOT: tessel.cast
func.func @attention(%q: tensor<2x2x4x8xbf16>, %kt: tensor<2x2x8x4xbf16>, %v: tensor<2x2x4x8xbf16>, %m: tensor<1x1x4x4xbf16>, %f: tensor<bf16>, %g: tensor<2x2x4x8xbf16>) -> (tensor<2x2x4x8xbf16>, tensor<2x2x8x4xbf16>, tensor<2x2x4x8xbf16>) {
  %o, %lse = tessel.attention %q, %kt, %v mask %m nan_fill %f : (tensor<2x2x4x8xbf16>, tensor<2x2x8x4xbf16>, tensor<2x2x4x8xbf16>, tensor<1x1x4x4xbf16>, tensor<bf16>) -> (tensor<2x2x4x8xbf16>, tensor<2x2x4xf32>)
  %dq, %dkt, %dv = tessel.attention_grad %q, %kt, %v, %o, %lse, %g mask %m nan_fill %f : (tensor<2x2x4x8xbf16>, tensor<2x2x8x4xbf16>, tensor<2x2x4x8xbf16>, tensor<2x2x4x8xbf16>, tensor<2x2x4xf32>, tensor<2x2x4x8xbf16>, tensor<1x1x4x4xbf16>, tensor<bf16>) -> (tensor<2x2x4x8xbf16>, tensor<2x2x8x4xbf16>, tensor<2x2x4x8xbf16>)
  return %dq, %dkt, %dv : tensor<2x2x4x8xbf16>, tensor<2x2x8x4xbf16>, tensor<2x2x4x8xbf16>
}
