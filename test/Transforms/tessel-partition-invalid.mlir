// RUN: tessel-opt %s -tessel-partition -split-input-file -verify-diagnostics

// Partitioning needs every value annotated.
tessel.mesh @mesh ["tp"=4]
func.func @not_propagated(%x: tensor<8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}]>}) -> (tensor<8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}]>}) {
  // expected-error @+1 {{'tessel.exp' op result has no 'tessel.sharding'; run -tessel-propagate first}}
  %0 = tessel.exp %x : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// A sum over a padded dim whose pad is not zero (exp(0) = 1) would add the
// pad in: refused, naming the value, the dim, its size, the pad, the axes,
// the op that made the pad non-zero, and the plan's way out.
tessel.mesh @mesh ["tp"=4]
func.func @reduce_padded(%x: tensor<8x30xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp", pad = 2}]>}) -> (tensor<8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}]>}) {
  %e = tessel.exp %x {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp", pad = 2}]>} : tensor<8x30xf32>
  // expected-error @+1 {{'tessel.reduce_sum' op reduces over dim 1 of result 0 of 'tessel.exp' (size 30, pad 2) split over axes {"tp"}; the pad would enter the reduction: its padded entries are not known to be zero ('tessel.exp' at}}
  %0 = tessel.reduce_sum %e dims = [1] {tessel.sharding = #tessel.sharding<@mesh, [{}], partial = [sum("tp")]>} : (tensor<8x30xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// A mean over a padded dim would divide by the wrong count, even with a
// zero pad.
tessel.mesh @mesh ["tp"=4]
func.func @mean_padded(%x: tensor<8x30xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp", pad = 2}]>}) -> (tensor<8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}]>}) {
  // expected-error @+1 {{'tessel.reduce_mean' op reduces over dim 1 of argument 0 (size 30, pad 2) split over axes {"tp"}; the pad would enter the reduction: only sums and matmuls over a padded dim are exact. In the plan, split a dim the axes divide (`split: {dim: N, axes: [AXIS]}` on a weight whose dim divides), or give the mesh axis a size that divides 30 (--mesh AXIS=K)}}
  %0 = tessel.reduce_mean %x dims = [1] {tessel.sharding = #tessel.sharding<@mesh, [{}], partial = [mean("tp")]>} : (tensor<8x30xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Splitting a value locally into a padded dim is not supported yet.
tessel.mesh @mesh ["tp"=4]
func.func @slice_into_pad(%x: tensor<30xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}]>}) -> (tensor<30xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp", pad = 2}]>}) {
  %0 = tessel.exp %x {tessel.sharding = #tessel.sharding<@mesh, [{}]>} : tensor<30xf32>
  // expected-error @+1 {{'func.return' op cannot reshard result 0 of 'tessel.exp' dim 0 of size 30 with pad 0 over axes {"tp"}: splitting a dim locally with a pad is not supported yet}}
  return %0 : tensor<30xf32>
}
