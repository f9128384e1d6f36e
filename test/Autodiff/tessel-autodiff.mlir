// RUN: tessel-opt %s -tessel-autodiff -split-input-file | FileCheck %s
// RUN: tessel-opt %s -tessel-autodiff=wrt=args -split-input-file | FileCheck %s --check-prefix=ARGS

// A linear layer and a mean: d loss = 1, the mean's gradient broadcast back,
// the bias's summed over the broadcast dim, the weight's one gemm.
// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>) -> (tensor<f32>, tensor<8x2xf32>, tensor<2xf32>)
// CHECK-SAME: attributes {tessel.gradients = ["fc.weight", "fc.bias"]}
// CHECK: %[[L:.*]] = tessel.reduce_mean
// CHECK-NEXT: %[[ONE:.*]] = tessel.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[R:.*]] = tessel.reshape %[[ONE]] : (tensor<f32>) -> tensor<1x1xf32>
// CHECK-NEXT: %[[N:.*]] = tessel.constant dense<1.250000e-01> : tensor<f32>
// CHECK-NEXT: %[[S:.*]] = tessel.mul %[[R]], %[[N]] : (tensor<1x1xf32>, tensor<f32>) -> tensor<1x1xf32>
// CHECK-NEXT: %[[DZ:.*]] = tessel.expand %[[S]] : (tensor<1x1xf32>) -> tensor<4x2xf32>
// CHECK-NEXT: %[[DB1:.*]] = tessel.reduce_sum %[[DZ]] dims = [0] keep_dims : (tensor<4x2xf32>) -> tensor<1x2xf32>
// CHECK-NEXT: %[[DB:.*]] = tessel.reshape %[[DB1]] : (tensor<1x2xf32>) -> tensor<2xf32>
// CHECK-NEXT: %[[DW:.*]] = tessel.gemm %[[X]], %[[DZ]] {trans_a} : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
// CHECK-NEXT: return %[[L]], %[[DW]], %[[DB]] : tensor<f32>, tensor<8x2xf32>, tensor<2xf32>
// With wrt=args, the argument's gradient instead (the weights get none).
// ARGS-LABEL: func.func @linear
// ARGS-SAME: -> (tensor<f32>, tensor<4x8xf32>)
// ARGS-SAME: attributes {tessel.gradients = ["arg0"]}
// ARGS: %[[DX:.*]] = tessel.gemm %{{.*}}, %{{.*}} {trans_b} : (tensor<4x2xf32>, tensor<8x2xf32>) -> tensor<4x8xf32>
// ARGS-NEXT: return %{{.*}}, %[[DX]] : tensor<f32>, tensor<4x8xf32>
func.func @linear(%x: tensor<4x8xf32>) -> tensor<f32> {
  %w = tessel.weight "fc.weight" : tensor<8x2xf32>
  %b = tessel.weight "fc.bias" : tensor<2xf32>
  %y = tessel.matmul %x, %w : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %z = tessel.add %y, %b : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %l = tessel.reduce_mean %z dims = [0, 1] : (tensor<4x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A weight read at two places (a tied embedding) gets the sum of both
// gradients; a value used twice sums too; a weight the loss does not depend
// on gets zeros; integer weights, and the ops off every path, get nothing.
// Earlier results stay in front, output names grow with the results.
// CHECK-LABEL: func.func @shared
// CHECK-SAME: -> (tensor<3xf32>, tensor<f32>, tensor<3xf32>, tensor<3xf32>)
// CHECK-SAME: tessel.gradients = ["w", "unused"]
// CHECK-SAME: tessel.output_names = ["y", "loss", "w.grad", "unused.grad"]
// CHECK: %[[W1:.*]] = tessel.weight "w"
// CHECK: %[[W2:.*]] = tessel.weight "w"
// CHECK: %[[M:.*]] = tessel.mul %[[W1]], %[[W2]]
// CHECK: %[[L:.*]] = tessel.reduce_sum %[[M]]
// CHECK: %[[ONE:.*]] = tessel.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[G:.*]] = tessel.expand
// CHECK: %[[G1:.*]] = tessel.mul %[[G]], %[[W2]]
// CHECK: %[[G2:.*]] = tessel.mul %[[G]], %[[W1]]
// CHECK: %[[SUM:.*]] = tessel.add %[[G1]], %[[G2]]
// CHECK: %[[Z:.*]] = tessel.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK: return %{{.*}}, %[[L]], %[[SUM]], %[[Z]]
func.func @shared(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<f32>)
    attributes {tessel.output_names = ["y", "loss"]} {
  %w1 = tessel.weight "w" : tensor<3xf32>
  %w2 = tessel.weight "w" : tensor<3xf32>
  %u = tessel.weight "unused" : tensor<3xf32>
  %i = tessel.weight "steps" : tensor<3xi64>
  %y = tessel.add %x, %u : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %m = tessel.mul %w1, %w2 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %l = tessel.reduce_sum %m dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %y, %l : tensor<3xf32>, tensor<f32>
}

// -----

// Only public functions whose last result is a scalar float are
// differentiated.
// CHECK-LABEL: func.func private @helper
// CHECK-SAME: -> tensor<f32> {
// CHECK-LABEL: func.func @not_a_loss
// CHECK-SAME: -> tensor<2xf32> {
// CHECK-LABEL: func.func @loss
// CHECK-SAME: -> (tensor<f32>, tensor<2xf32>)
func.func private @helper(%x: tensor<2xf32>) -> tensor<f32> {
  %l = tessel.reduce_sum %x dims = [0] : (tensor<2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
func.func @not_a_loss(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
func.func @loss(%x: tensor<2xf32>) -> tensor<f32> {
  %w = tessel.weight "w" : tensor<2xf32>
  %m = tessel.mul %x, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %l = tessel.reduce_sum %m dims = [0] : (tensor<2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Named inputs and outputs: with wrt=args the gradient outputs take the
// input's name; integer arguments get no gradient.
// ARGS-LABEL: func.func @named
// ARGS-SAME: -> (tensor<f32>, tensor<2x3xf32>)
// ARGS-SAME: tessel.gradients = ["arg0"]
// ARGS-SAME: tessel.output_names = ["loss", "x.grad"]
// CHECK-LABEL: func.func @named
// CHECK-SAME: -> (tensor<f32>, tensor<3x4xf32>)
// CHECK-SAME: tessel.gradients = ["wte"]
// CHECK-SAME: tessel.output_names = ["loss", "wte.grad"]
func.func @named(%x: tensor<2x3xf32>, %ids: tensor<2xi64>) -> tensor<f32>
    attributes {tessel.input_names = ["x", "ids"], tessel.output_names = ["loss"]} {
  %wte = tessel.weight "wte" : tensor<3x4xf32>
  %e = tessel.gather %wte[%ids] axis = 0 : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %y = tessel.matmul %x, %wte : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %z = tessel.mul %y, %e : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %l = tessel.reduce_sum %z dims = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
