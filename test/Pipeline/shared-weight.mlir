// RUN: tessel-opt %s -tessel-stage-split='stages=2 rules=/s0/*=0,/s1/*=1' -tessel-microbatch=count=2 -tessel-autodiff -tessel-optimizer='kind=sgd lr=0.1' -tessel-pipeline-lower='schedule=1f1b' -verify-diagnostics

// A weight read by two pipeline stages (as a tied embedding and head are)
// is refused, naming it, the rank that reads it and the stage that updates
// it: that rank's copy would go stale after the first step. (Summing its
// gradients across stages, Megatron's way, is not done yet.)
tessel.mesh @mesh ["pp"=2]
// expected-error @below {{weight 'w' is read on pp rank 0 but updated on stage 1 (pp rank 1): a weight shared between stages}}
func.func @main(%x: tensor<4x3xf32>) -> tensor<f32> {
  %w = tessel.weight "w" : tensor<3x3xf32>
  %a = tessel.matmul %x, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32> loc("/s0/mm")
  %b = tessel.matmul %a, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32> loc("/s1/mm")
  %l = tessel.reduce_mean %b dims = [0, 1] : (tensor<4x3xf32>) -> tensor<f32> loc("/s1/loss")
  return %l : tensor<f32>
}
