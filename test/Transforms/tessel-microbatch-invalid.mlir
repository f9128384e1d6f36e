// RUN: tessel-opt %s -split-input-file -verify-diagnostics -tessel-microbatch=count=2

// microbatch_slice_batch: a slice that cuts the batch itself.
func.func @slice_batch(%x: tensor<4x4xf32>) -> tensor<f32> {
  // expected-error @below {{cannot be split into microbatches: it takes rows 0:1:1 of dim 0 of its operand, which holds the batch (4 rows, 2 per microbatch); only the whole batch can be sliced so}}
  %c = tessel.slice %x [0:1:1, 0:4:1] : (tensor<4x4xf32>) -> tensor<1x4xf32>
  %l = tessel.reduce_mean %c dims = [0, 1] : (tensor<1x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// microbatch_shared_inner: a shared operand that meets the batch where the
// batch is not the outermost factor of its dim (rows [5, 4] merged after a
// transpose put the batch inside).
func.func @shared_inner(%x: tensor<4x5xf32>) -> tensor<f32> {
  %t = tessel.weight "t" : tensor<20xf32>
  %y = tessel.transpose %x perm = [1, 0] : (tensor<4x5xf32>) -> tensor<5x4xf32>
  %r = tessel.reshape %y : (tensor<5x4xf32>) -> tensor<20xf32>
  // expected-error @below {{cannot be split into microbatches: operand 1 (shared by the microbatches: it depends on no argument) meets the batch in its dim 0 of size 20, where the batch is not the outermost factor}}
  %a = tessel.add %r, %t : (tensor<20xf32>, tensor<20xf32>) -> tensor<20xf32>
  %l = tessel.reduce_mean %a dims = [0] : (tensor<20xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
