// RUN: tessel-opt %s -tessel-classify-parameters -tessel-autodiff | FileCheck %s
// RUN: tessel-opt %s "-tessel-classify-parameters=frozen=fc.*" | FileCheck %s --check-prefix=FROZEN
// RUN: tessel-opt %s "-tessel-classify-parameters=trainable=table" | FileCheck %s --check-prefix=ONLY
// RUN: not tessel-opt %s "-tessel-classify-parameters=trainable=nothing*" 2>&1 | FileCheck %s --check-prefix=NOMATCH
// RUN: not tessel-opt %s "-tessel-classify-parameters=trainable=ids" 2>&1 | FileCheck %s --check-prefix=INT
// RUN: not tessel-opt %s "-tessel-classify-parameters=frozen=*" 2>&1 | FileCheck %s --check-prefix=NONE

// Which weights train: the parameter (the importer said so), the
// initializer nothing is known of; not the folded rotary table (the importer
// said constant), the scalar exponent, the weight only a shape depends on,
// nor the index table (integer).
// CHECK: module attributes {
// CHECK-SAME: tessel.parameter_classes = {
// CHECK-SAME: fc.weight = [true, "parameter (torch.export PARAMETER)"]
// CHECK-SAME: rotary = [false, "constant (folded by the exporter from model.rotary_emb.inv_freq)"]
// CHECK-SAME: side = [false, "the loss does not depend on it through a differentiable operand"]
// CHECK-SAME: table = [true, "a float initializer the loss depends on"]
// CHECK-SAME: two = [false, "a scalar (an exporter's constant operand)"]
// CHECK-SAME: tessel.trainable = ["fc.weight", "table"]
// CHECK: tessel.gradients = ["fc.weight", "table"]

// FROZEN: fc.weight = [false, "--frozen 'fc.*'"]
// FROZEN: tessel.trainable = ["table"]
// ONLY: fc.weight = [false, "matched by no --trainable pattern"]
// ONLY: table = [true, "--trainable 'table'"]
// ONLY: tessel.trainable = ["table"]
// NOMATCH: error: --trainable 'nothing*' matches no weight (weights: fc.weight, table, rotary, two, side)
// INT: error: --trainable 'ids' matches 'ids', a tensor<4xi64>: only float tensors train
// NONE: error: nothing to train: no weight of the model is trainable:
// NONE-NEXT: fc.weight: --frozen '*'

module attributes {tessel.weight_origins = {
    "fc.weight" = ["parameter", "torch.export PARAMETER"],
    rotary = ["constant", "folded by the exporter from model.rotary_emb.inv_freq"]}} {
  func.func @main(%x: tensor<4x8xf32>) -> tensor<f32> {
    %w = tessel.weight "fc.weight" : tensor<8x4xf32>
    %t = tessel.weight "table" : tensor<4x4xf32>
    %r = tessel.weight "rotary" : tensor<4x4xf32>
    %e = tessel.weight "two" : tensor<f32>
    %s = tessel.weight "side" : tensor<4x4xf32>
    %ids = tessel.weight "ids" : tensor<4xi64>
    %h = tessel.matmul %x, %w : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
    %a = tessel.add %h, %t : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %b = tessel.mul %a, %r : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %c = tessel.pow %b, %e : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
    %l = tessel.reduce_sum %c dims = [0, 1] : (tensor<4x4xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
