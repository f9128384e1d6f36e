// RUN: tessel-opt %s -tessel-propagate -tessel-partition -split-input-file | FileCheck %s

// Sums over a padded dim are exact when each padded term is zero: graph
// inputs and weights hold zeros in their pad (filled on load), a product
// with a zero factor is zero. 30 over tp=4: 8 per rank, the last 2 padded.

// A row-parallel matmul over two zero-padded operands: a partial sum.
// CHECK-LABEL: func.func @matmul_over_pad
// CHECK-SAME: %x: tensor<5x8xf32>, %y: tensor<8x3xf32>
// CHECK-NEXT: %[[M:.*]] = tessel.matmul %x, %y : (tensor<5x8xf32>, tensor<8x3xf32>) -> tensor<5x3xf32>
// CHECK-NEXT: tessel.all_reduce sum %[[M]]
tessel.mesh @mesh ["tp"=4]
func.func @matmul_over_pad(%x: tensor<5x30xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp", pad = 2}]>}, %y: tensor<30x3xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp", pad = 2}, {}]>}) -> tensor<5x3xf32> {
  %r = tessel.matmul %x, %y : (tensor<5x30xf32>, tensor<30x3xf32>) -> tensor<5x3xf32>
  return %r : tensor<5x3xf32>
}

// -----

// exp(0) = 1 in x's pad, but y's pad is zero: the products are zero.
// CHECK-LABEL: func.func @finite_times_zero
// CHECK: tessel.exp
// CHECK: tessel.matmul
// CHECK: tessel.all_reduce sum
tessel.mesh @mesh ["tp"=4]
func.func @finite_times_zero(%x: tensor<5x30xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp", pad = 2}]>}, %y: tensor<30x3xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp", pad = 2}, {}]>}) -> tensor<5x3xf32> {
  %e = tessel.exp %x : tensor<5x30xf32>
  %r = tessel.matmul %e, %y : (tensor<5x30xf32>, tensor<30x3xf32>) -> tensor<5x3xf32>
  return %r : tensor<5x3xf32>
}

// -----

// SwiGLU's shape (Llama's MLP): silu(g) * u keeps the zeros of g and u
// (sigmoid(0) = 1/2 is finite); a sum over the product is exact.
// CHECK-LABEL: func.func @swiglu_sum
// CHECK: tessel.sigmoid
// CHECK: tessel.reduce_sum
// CHECK: tessel.all_reduce sum
tessel.mesh @mesh ["tp"=4]
func.func @swiglu_sum(%g: tensor<5x30xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp", pad = 2}]>}, %u: tensor<5x30xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp", pad = 2}]>}) -> tensor<5xf32> {
  %s = tessel.sigmoid %g : tensor<5x30xf32>
  %a = tessel.mul %g, %s : (tensor<5x30xf32>, tensor<5x30xf32>) -> tensor<5x30xf32>
  %p = tessel.mul %a, %u : (tensor<5x30xf32>, tensor<5x30xf32>) -> tensor<5x30xf32>
  %r = tessel.reduce_sum %p dims = [1] : (tensor<5x30xf32>) -> tensor<5xf32>
  return %r : tensor<5xf32>
}

// -----

// softsign and sin keep zeros (Tessel_ZeroPreserving in their ODS): a sum
// over the padded dim of softsign(sin(x)) is exact.
// CHECK-LABEL: func.func @zero_preserving_sum
// CHECK: tessel.softsign
// CHECK: tessel.reduce_sum
// CHECK: tessel.all_reduce sum
tessel.mesh @mesh ["tp"=4]
func.func @zero_preserving_sum(%x: tensor<5x30xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp", pad = 2}]>}) -> tensor<5xf32> {
  %s = tessel.sin %x : tensor<5x30xf32>
  %t = tessel.softsign %s : tensor<5x30xf32>
  %r = tessel.reduce_sum %t dims = [1] : (tensor<5x30xf32>) -> tensor<5xf32>
  return %r : tensor<5xf32>
}
