// RUN: tessel-opt %s -tessel-partition -split-input-file -verify-diagnostics

// Partitioning needs every value annotated.
tessel.mesh @mesh ["tp"=4]
func.func @not_propagated(%x: tensor<8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}]>}) -> (tensor<8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}]>}) {
  // expected-error @+1 {{'tessel.exp' op result has no 'tessel.sharding'; run -tessel-propagate first}}
  %0 = tessel.exp %x : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// A reduction over a padded dim would add the pad in: refused, naming the
// value, the dim, its size, the pad and the axes.
tessel.mesh @mesh ["tp"=4]
func.func @reduce_padded(%x: tensor<8x30xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp", pad = 2}]>}) -> (tensor<8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}]>}) {
  // expected-error @+1 {{'tessel.reduce_sum' op reduces over dim 1 of argument 0 (size 30, pad 2) split over axes {"tp"}; the pad would enter the reduction (masking is not implemented): choose an axis that divides the dim}}
  %0 = tessel.reduce_sum %x dims = [1] {tessel.sharding = #tessel.sharding<@mesh, [{}], partial = [sum("tp")]>} : (tensor<8x30xf32>) -> tensor<8xf32>
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
