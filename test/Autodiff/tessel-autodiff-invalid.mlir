// RUN: tessel-opt %s -tessel-autodiff -split-input-file -verify-diagnostics
// RUN: not tessel-opt %s -tessel-autodiff=wrt=everything 2>&1 | FileCheck %s --check-prefix=WRT
// RUN: not tessel-opt %S/Inputs/no-rule.mlir -tessel-autodiff 2>&1 | FileCheck %s --check-prefix=NORULE
// RUN: not tessel-opt %S/Inputs/no-loss.mlir -tessel-autodiff 2>&1 | FileCheck %s --check-prefix=NOLOSS

// NOLOSS: error: -tessel-autodiff: no public function returns a scalar float loss (tensor<f32>) as its last result

// WRT: error: -tessel-autodiff: unknown wrt='everything' (weights, args)

// An op without a gradient rule on a path from a weight to the loss: the
// error names the op, its ONNX node and the operand on the path.
// NORULE: error: loc("/bn/BatchNormalization"): 'tessel.batch_norm_train' op has no gradient rule (ONNX node '/bn/BatchNormalization'), but its operand 1 is on a path from a differentiated value to the loss

// batch_norm_train has none: -tessel-batch-norm-train lowers it first.
func.func @no_rule(%x: tensor<2x1x2x2xf32>) -> tensor<f32> {
  %s = tessel.weight "s" : tensor<1xf32>
  %b = tessel.weight "b" : tensor<1xf32>
  %m = tessel.weight "m" : tensor<1xf32>
  %v = tessel.weight "v" : tensor<1xf32>
  // expected-error @below {{'tessel.batch_norm_train' op has no gradient rule, but its operand 1 is on a path from a differentiated value to the loss}}
  %y = tessel.batch_norm_train %x, %s, %b, %m, %v : (tensor<2x1x2x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x1x2x2xf32>
  %l = tessel.reduce_sum %y dims = [0, 1, 2, 3] : (tensor<2x1x2x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An op without a rule that is on no path is fine: here batch_norm_train
// reads only the argument and constants, and the weight reaches the loss
// another way.
func.func @off_path(%x: tensor<2x1x2x2xf32>) -> tensor<f32> {
  %w = tessel.weight "w" : tensor<2x1x2x2xf32>
  %c = tessel.constant dense<1.0> : tensor<1xf32>
  %p = tessel.batch_norm_train %x, %c, %c, %c, %c : (tensor<2x1x2x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x1x2x2xf32>
  %y = tessel.mul %p, %w : (tensor<2x1x2x2xf32>, tensor<2x1x2x2xf32>) -> tensor<2x1x2x2xf32>
  %l = tessel.reduce_sum %y dims = [0, 1, 2, 3] : (tensor<2x1x2x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @two_types(%x: tensor<2xf32>) -> tensor<f32> {
  %a = tessel.weight "w" : tensor<2xf32>
  // expected-error @below {{'tessel.weight' op reads weight "w" as 'tensor<1x2xf32>', elsewhere as 'tensor<2xf32>': its gradient has no single type}}
  %b = tessel.weight "w" : tensor<1x2xf32>
  %l = tessel.reduce_sum %a dims = [0] : (tensor<2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @below {{'func.func' op already has gradients ('tessel.gradients')}}
func.func @twice(%x: tensor<2xf32>) -> (tensor<f32>, tensor<f32>) attributes {tessel.gradients = ["w"]} {
  %w = tessel.weight "w" : tensor<f32>
  %l = tessel.mul %w, %w : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %d = tessel.add %w, %w : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l, %d : tensor<f32>, tensor<f32>
}

// -----

// batch_stats claims that the statistics are the input's own; the rule
// checks it (here the mean is a weight, not reduce_mean(x)).
func.func @batch_stats_not_the_batch_statistics(%x: tensor<2x3x4xf32>) -> tensor<f32> {
  %s = tessel.weight "s" : tensor<3xf32>
  %b = tessel.weight "b" : tensor<3xf32>
  %m = tessel.weight "m" : tensor<3xf32>
  %v = tessel.weight "v" : tensor<3xf32>
  // expected-error @below {{'tessel.batch_norm' op has batch_stats, but its mean and variance are not reduce_mean(x) and batch_norm_variance(x, mean) (or reduce_mean((x - mean)^2)) of its input over every dim but 1}}
  %y = tessel.batch_norm %x, %s, %b, %m, %v {batch_stats} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  %l = tessel.reduce_sum %y dims = [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Nor is a variance about 0 (the mean of x^2).
func.func @batch_stats_uncentred_variance(%x: tensor<2x3x4xf32>) -> tensor<f32> {
  %s = tessel.weight "s" : tensor<3xf32>
  %b = tessel.weight "b" : tensor<3xf32>
  %m = tessel.reduce_mean %x dims = [0, 2] : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %sq = tessel.mul %x, %x : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %v = tessel.reduce_mean %sq dims = [0, 2] : (tensor<2x3x4xf32>) -> tensor<3xf32>
  // expected-error @below {{'tessel.batch_norm' op has batch_stats}}
  %y = tessel.batch_norm %x, %s, %b, %m, %v {batch_stats} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  %l = tessel.reduce_sum %y dims = [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
