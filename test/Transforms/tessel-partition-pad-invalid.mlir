// RUN: tessel-opt %s -tessel-propagate -tessel-partition -verify-diagnostics -split-input-file

// sqrt of a finite pad (exp(0) - 2 = -1 there) is NaN: the matmul over it is
// refused although y's pad is zero (NaN * 0 is NaN), naming the sqrt.
tessel.mesh @mesh ["tp"=4]
func.func @nan_pad(%x: tensor<5x30xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp", pad = 2}]>}, %y: tensor<30x3xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp", pad = 2}, {}]>}) -> tensor<5x3xf32> {
  %e = tessel.exp %x : tensor<5x30xf32>
  %two = tessel.constant dense<2.000000e+00> : tensor<f32>
  %d = tessel.sub %e, %two : (tensor<5x30xf32>, tensor<f32>) -> tensor<5x30xf32>
  %s = tessel.sqrt %d : tensor<5x30xf32>
  // expected-error @+1 {{its padded entries are not known to be zero ('tessel.sqrt' at}}
  %r = tessel.matmul %s, %y : (tensor<5x30xf32>, tensor<30x3xf32>) -> tensor<5x3xf32>
  return %r : tensor<5x3xf32>
}

// -----

// cos(0) = 1 (Tessel_FinitePreserving, not zero-preserving): a sum over a
// padded dim of cos(x) would add the pad's ones; refused, naming the cos.
tessel.mesh @mesh ["tp"=4]
func.func @finite_pad_sum(%x: tensor<5x30xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp", pad = 2}]>}) -> tensor<5xf32> {
  %c = tessel.cos %x : tensor<5x30xf32>
  // expected-error @+1 {{its padded entries are not known to be zero ('tessel.cos' at}}
  %r = tessel.reduce_sum %c dims = [1] : (tensor<5x30xf32>) -> tensor<5xf32>
  return %r : tensor<5xf32>
}
