// RUN: tessel-opt %s -split-input-file -tessel-stage-split='stages=2 rules=/s0/*=0,/s1/*=1' -tessel-microbatch=count=2 -tessel-autodiff -tessel-optimizer='kind=sgd lr=0.1' -tessel-pipeline-lower='schedule=1f1b' -verify-diagnostics
// RUN: tessel-opt %S/Inputs/shared-weight-tagged.mlir -tessel-pipeline-lower='schedule=1f1b' -verify-diagnostics

// read_without_part: a weight read on pp rank 0 whose gradient pp rank 0
// computes no part of: the model is linear and its loss a mean, so stage
// 0's part depends on the data and constants alone and is computed where
// it is summed, on rank 1. Rank 0's copy would go stale after the first
// step; refused, naming the weight, the rank and the stage that updates it.
tessel.mesh @mesh ["pp"=2]
// expected-error @below {{weight 'w' is read on pp rank 0 but updated on stage 1 (pp rank 1), and pp rank 0 computes no part of its gradient, so its copy would go stale}}
func.func @main(%x: tensor<4x3xf32>) -> tensor<f32> {
  %w = tessel.weight "w" : tensor<3x3xf32>
  %a = tessel.matmul %x, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32> loc("/s0/mm")
  %b = tessel.matmul %a, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32> loc("/s1/mm")
  %l = tessel.reduce_mean %b dims = [0, 1] : (tensor<4x3xf32>) -> tensor<f32> loc("/s1/loss")
  return %l : tensor<f32>
}
