// The training ops (TrainingOps.td) round-trip, and each verifier message,
// named after the constraint of the op's description it enforces.
// RUN: tessel-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @ok
// CHECK: tessel.gather_grad %dy, %ids axis = 0
// CHECK: tessel.gelu_grad %x, %x {tanh_approximation}
// CHECK: tessel.log_softmax_grad %x, %x axis = 1
// CHECK: tessel.adam_update
// CHECK: tessel.sgd_update {{.*}}nesterov
// CHECK: tessel.relu_grad %x, %x :
// CHECK: tessel.batch_norm_grad_sums %dy, %dy, %c :
// CHECK: tessel.batch_norm_grad_input %dy, %dy, %c, %c, %c, %c :
// CHECK: tessel.batch_norm %dy, %c, %c, %c, %c {batch_stats, epsilon = 1.000000e-03 : f32}
// CHECK: tessel.batch_norm_variance %dy, %c :
func.func @ok(%dy: tensor<2x3x4xf32>, %ids: tensor<2x3xi64>, %x: tensor<6x4xf32>, %s: tensor<f32>, %c: tensor<3xf32>) {
  %0 = tessel.gather_grad %dy, %ids axis = 0 : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<10x4xf32>
  %1 = tessel.gelu_grad %x, %x {tanh_approximation} : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
  %2 = tessel.log_softmax_grad %x, %x axis = 1 : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
  %3:3 = tessel.adam_update %x, %x, %x, %x, %s, %s, %s {beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-08 : f32} : (tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>)
  %4:2 = tessel.sgd_update %x, %x, %x, %s {momentum = 0.9 : f32, nesterov} : (tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<f32>) -> (tensor<6x4xf32>, tensor<6x4xf32>)
  %5 = tessel.relu_grad %x, %x : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
  %6:2 = tessel.batch_norm_grad_sums %dy, %dy, %c : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  %7 = tessel.batch_norm_grad_input %dy, %dy, %c, %c, %c, %c : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  %8 = tessel.batch_norm %dy, %c, %c, %c, %c {batch_stats, epsilon = 1.0e-03 : f32} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  %9 = tessel.batch_norm_variance %dy, %c : (tensor<2x3x4xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

// gather_grad_c1
func.func @f(%dy: tensor<3x4xf32>, %ids: tensor<3xi64>) {
  // expected-error@+1 {{'tessel.gather_grad' op axis 2 is out of range [0, 2)}}
  %0 = tessel.gather_grad %dy, %ids axis = 2 : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<10x4xf32>
  return
}

// -----

// gather_grad_c2
func.func @f(%dy: tensor<3x5xf32>, %ids: tensor<3xi64>) {
  // expected-error@+1 {{'tessel.gather_grad' op grad has shape [3, 5], the gather of the result's shape by the indices has [3, 4]}}
  %0 = tessel.gather_grad %dy, %ids axis = 0 : (tensor<3x5xf32>, tensor<3xi64>) -> tensor<10x4xf32>
  return
}

// -----

// gelu_grad_c1
func.func @f(%x: tensor<3x4xf32>, %g: tensor<3x5xf32>) {
  // expected-error@+1 {{'tessel.gelu_grad' op grad has type 'tensor<3x5xf32>', expected 'tensor<3x4xf32>'}}
  %0 = tessel.gelu_grad %x, %g : (tensor<3x4xf32>, tensor<3x5xf32>) -> tensor<3x4xf32>
  return
}

// -----

// log_softmax_grad_c1
func.func @f(%x: tensor<3x4xf32>) {
  // expected-error@+1 {{'tessel.log_softmax_grad' op axis 2 is out of range [0, 2)}}
  %0 = tessel.log_softmax_grad %x, %x axis = 2 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return
}

// -----

// adam_update_c1
func.func @f(%x: tensor<3x4xf32>, %m: tensor<4x3xf32>, %s: tensor<f32>) {
  // expected-error@+1 {{'tessel.adam_update' op exp_avg has type 'tensor<4x3xf32>', expected 'tensor<3x4xf32>'}}
  %0:3 = tessel.adam_update %x, %x, %m, %x, %s, %s, %s {beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-08 : f32} : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>, tensor<3x4xf32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>)
  return
}

// -----

// sgd_update_c2
func.func @f(%x: tensor<3x4xf32>, %lr: tensor<1xf32>) {
  // expected-error@+1 {{'tessel.sgd_update' op lr must be an f32 scalar (tensor<f32>), got 'tensor<1xf32>'}}
  %0:2 = tessel.sgd_update %x, %x, %x, %lr {momentum = 0.9 : f32} : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<1xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>)
  return
}

// -----

// relu_grad_c1
func.func @f(%y: tensor<3x4xf32>, %g: tensor<4x3xf32>) {
  // expected-error@+1 {{'tessel.relu_grad' op grad has type 'tensor<4x3xf32>', expected 'tensor<3x4xf32>'}}
  %0 = tessel.relu_grad %y, %g : (tensor<3x4xf32>, tensor<4x3xf32>) -> tensor<3x4xf32>
  return
}

// -----

// batch_norm_grad_sums_c1
func.func @f(%g: tensor<4xf32>, %m: tensor<4xf32>) {
  // expected-error@+1 {{'tessel.batch_norm_grad_sums' op grad must have rank at least 2, got 1}}
  %0:2 = tessel.batch_norm_grad_sums %g, %g, %m : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// batch_norm_grad_sums_c1
func.func @f(%g: tensor<2x3x4xf32>, %x: tensor<2x3x5xf32>, %m: tensor<3xf32>) {
  // expected-error@+1 {{'tessel.batch_norm_grad_sums' op input has type 'tensor<2x3x5xf32>', expected 'tensor<2x3x4xf32>'}}
  %0:2 = tessel.batch_norm_grad_sums %g, %x, %m : (tensor<2x3x4xf32>, tensor<2x3x5xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

// batch_norm_grad_sums_c2
func.func @f(%g: tensor<2x3x4xf32>, %m: tensor<3xf32>) {
  // expected-error@+1 {{'tessel.batch_norm_grad_sums' op sum_grad_centred has type 'tensor<4xf32>', expected 'tensor<3xf32>' (one per channel)}}
  %0:2 = tessel.batch_norm_grad_sums %g, %g, %m : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<4xf32>)
  return
}

// -----

// batch_norm_grad_input_c1
func.func @f(%g: tensor<2x3x4xf32>, %m: tensor<3xf32>) {
  // expected-error@+1 {{'tessel.batch_norm_grad_input' op result has type 'tensor<2x3x5xf32>', expected 'tensor<2x3x4xf32>'}}
  %0 = tessel.batch_norm_grad_input %g, %g, %m, %m, %m, %m : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x5xf32>
  return
}

// -----

// batch_norm_grad_input_c2
func.func @f(%g: tensor<2x3x4xf32>, %m: tensor<3xf32>, %p: tensor<3x1xf32>) {
  // expected-error@+1 {{'tessel.batch_norm_grad_input' op proj has type 'tensor<3x1xf32>', expected 'tensor<3xf32>' (one per channel)}}
  %0 = tessel.batch_norm_grad_input %g, %g, %m, %m, %p, %m : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3x1xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  return
}

// -----

// batch_norm_variance_c1
func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{'tessel.batch_norm_variance' op input must have rank at least 2, got 1}}
  %0 = tessel.batch_norm_variance %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// batch_norm_variance_c2
func.func @f(%x: tensor<2x3x4xf32>, %m: tensor<3xf32>) {
  // expected-error@+1 {{'tessel.batch_norm_variance' op result has type 'tensor<4xf32>', expected 'tensor<3xf32>' (one per channel)}}
  %0 = tessel.batch_norm_variance %x, %m : (tensor<2x3x4xf32>, tensor<3xf32>) -> tensor<4xf32>
  return
}
