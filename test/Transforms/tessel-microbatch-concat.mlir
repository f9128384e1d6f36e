// RUN: tessel-opt %s -split-input-file -verify-diagnostics -tessel-microbatch='count=2 concat-outputs=true' | FileCheck %s

// An inference step: each output that depends on an argument is the
// concatenation of its microbatch copies along its batch dim (here dim 1,
// after a transpose); an output of weights alone passes through.
// CHECK-LABEL: func.func @concat
// CHECK: tessel.slice %x [0:2:1, 0:3:1]
// CHECK: %[[TA:.*]] = tessel.transpose {{.*}} -> tensor<3x2xf32>
// CHECK: tessel.slice %x [2:4:1, 0:3:1]
// CHECK: %[[TB:.*]] = tessel.transpose {{.*}} -> tensor<3x2xf32>
// CHECK: %[[C:.*]] = tessel.concat %[[TA]], %[[TB]] dim = 1 : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x4xf32>
// CHECK: return %[[C]], %{{.*}} : tensor<3x4xf32>, tensor<3xf32>
func.func @concat(%x: tensor<4x3xf32>) -> (tensor<3x4xf32>, tensor<3xf32>) {
  %w = tessel.weight "w" : tensor<3xf32>
  %t = tessel.transpose %x perm = [1, 0] : (tensor<4x3xf32>) -> tensor<3x4xf32>
  return %t, %w : tensor<3x4xf32>, tensor<3xf32>
}

// -----

// An output whose batch is reduced away cannot be put together.
// expected-error @below {{output 0 ('tensor<3xf32>') reduces its batch away: it cannot be put together from 2 microbatches (compile with --microbatches 1)}}
func.func @reduced(%x: tensor<4x3xf32>) -> tensor<3xf32> {
  %s = tessel.reduce_sum %x dims = [0] : (tensor<4x3xf32>) -> tensor<3xf32>
  return %s : tensor<3xf32>
}
