// RUN: tessel-opt %s -tessel-autodiff -tessel-recompute | FileCheck %s

// Two layers (/layers.0/, /layers.1/ in the node names). Each squares its
// matmul, whose gradient reads the matmul's result %h: an activation
// internal to the layer. With -tessel-recompute the backward of each layer
// starts by recomputing %h from what the layer keeps (its input, its
// weight), and reads the copy; the layers' outputs (the tanh, read by the
// next layer and by the loss) are kept.
// CHECK-LABEL: func.func @main
// CHECK: %[[W0:.*]] = tessel.weight "l0.w"
// CHECK: %[[H0:.*]] = tessel.matmul %x, %[[W0]]
// CHECK-NEXT: tessel.mul %[[H0]], %[[H0]]
// CHECK-NEXT: %[[A0:.*]] = tessel.tanh
// CHECK: %[[W1:.*]] = tessel.weight "l1.w"
// CHECK: %[[H1:.*]] = tessel.matmul %[[A0]], %[[W1]]
// CHECK-NEXT: tessel.mul %[[H1]], %[[H1]]
// CHECK: %[[R1:.*]] = tessel.matmul %[[A0]], %[[W1]]
// CHECK-NEXT: tessel.mul %{{.*}}, %[[R1]]
// CHECK-NEXT: tessel.mul %{{.*}}, %[[R1]]
// CHECK: %[[R0:.*]] = tessel.matmul %x, %[[W0]]
// CHECK-NEXT: tessel.mul %{{.*}}, %[[R0]]
// CHECK-NEXT: tessel.mul %{{.*}}, %[[R0]]
// CHECK-NOT: %[[H0]]{{[^0-9]}}
// CHECK: return
func.func @main(%x: tensor<4x8xf32>) -> tensor<f32> {
  %w0 = tessel.weight "l0.w" : tensor<8x8xf32> loc("/layers.0/w")
  %h0 = tessel.matmul %x, %w0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("/layers.0/MatMul")
  %s0 = tessel.mul %h0, %h0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("/layers.0/Mul")
  %a0 = tessel.tanh %s0 : tensor<4x8xf32> loc("/layers.0/Tanh")
  %w1 = tessel.weight "l1.w" : tensor<8x8xf32> loc("/layers.1/w")
  %h1 = tessel.matmul %a0, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("/layers.1/MatMul")
  %s1 = tessel.mul %h1, %h1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("/layers.1/Mul")
  %a1 = tessel.tanh %s1 : tensor<4x8xf32> loc("/layers.1/Tanh")
  %l = tessel.reduce_sum %a1 dims = [0, 1] : (tensor<4x8xf32>) -> tensor<f32> loc("/ReduceSum")
  return %l : tensor<f32>
}
