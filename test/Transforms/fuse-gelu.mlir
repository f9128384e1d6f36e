// RUN: tessel-opt %s -tessel-fuse-gelu | FileCheck %s

// PyTorch's export of F.gelu(x, approximate="tanh") (opset 17).
// CHECK-LABEL: func.func @tanh_torch
// CHECK-NEXT: %[[G:.*]] = tessel.gelu %x {tanh_approximation} : tensor<4x8xf32>
// CHECK-NEXT: return %[[G]]
func.func @tanh_torch(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tessel.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = tessel.mul %x, %0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = tessel.constant dense<4.471500e-02> : tensor<f32>
  %2 = tessel.mul %c, %1 : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = tessel.add %x, %2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %k = tessel.constant dense<0.797884583> : tensor<f32>
  %4 = tessel.mul %k, %3 : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = tessel.tanh %4 : tensor<4x8xf32>
  %one = tessel.constant dense<1.000000e+00> : tensor<f32>
  %6 = tessel.add %one, %5 : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %7 = tessel.mul %x, %6 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %half = tessel.constant dense<5.000000e-01> : tensor<f32>
  %8 = tessel.mul %half, %7 : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %8 : tensor<4x8xf32>
}

// HuggingFace's NewGELU: 0.5 * x first, pow(x, 3), constants on the right.
// CHECK-LABEL: func.func @tanh_hf
// CHECK-NEXT: %[[G:.*]] = tessel.gelu %x {tanh_approximation} : tensor<2x3xf32>
// CHECK-NEXT: return %[[G]]
func.func @tanh_hf(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %half = tessel.constant dense<5.000000e-01> : tensor<f32>
  %0 = tessel.mul %x, %half : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %three = tessel.constant dense<3.000000e+00> : tensor<f32>
  %1 = tessel.pow %x, %three : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %c = tessel.constant dense<4.471500e-02> : tensor<f32>
  %2 = tessel.mul %1, %c : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %3 = tessel.add %2, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %k = tessel.constant dense<0.797884583> : tensor<f32>
  %4 = tessel.mul %3, %k : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %5 = tessel.tanh %4 : tensor<2x3xf32>
  %one = tessel.constant dense<1.000000e+00> : tensor<f32>
  %6 = tessel.add %5, %one : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %7 = tessel.mul %0, %6 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %7 : tensor<2x3xf32>
}

// The exact form, as torch.nn.GELU() exports it (BERT, ViT).
// CHECK-LABEL: func.func @erf
// CHECK-NEXT: %[[G:.*]] = tessel.gelu %x : tensor<2x3xf32>
// CHECK-NEXT: return %[[G]]
func.func @erf(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %s = tessel.constant dense<1.41421354> : tensor<f32>
  %0 = tessel.div %x, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %1 = tessel.erf %0 : tensor<2x3xf32>
  %one = tessel.constant dense<1.000000e+00> : tensor<f32>
  %2 = tessel.add %1, %one : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %3 = tessel.mul %x, %2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %half = tessel.constant dense<5.000000e-01> : tensor<f32>
  %4 = tessel.mul %3, %half : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %4 : tensor<2x3xf32>
}

// A wrong constant is not GELU: nothing changes.
// CHECK-LABEL: func.func @not_gelu
// CHECK-NOT: tessel.gelu
// CHECK: tessel.erf
// CHECK: return
func.func @not_gelu(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %s = tessel.constant dense<1.5> : tensor<f32>
  %0 = tessel.div %x, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %1 = tessel.erf %0 : tensor<2x3xf32>
  %one = tessel.constant dense<1.000000e+00> : tensor<f32>
  %2 = tessel.add %1, %one : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %3 = tessel.mul %x, %2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %half = tessel.constant dense<5.000000e-01> : tensor<f32>
  %4 = tessel.mul %3, %half : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %4 : tensor<2x3xf32>
}

// An intermediate that something else reads stays; the GELU is still fused.
// CHECK-LABEL: func.func @shared_intermediate
// CHECK-DAG: %[[E:.*]] = tessel.erf
// CHECK-DAG: %[[G:.*]] = tessel.gelu %x : tensor<2x3xf32>
// CHECK: return %[[G]], %[[E]]
func.func @shared_intermediate(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %s = tessel.constant dense<0.707106769> : tensor<f32>
  %0 = tessel.mul %x, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %1 = tessel.erf %0 : tensor<2x3xf32>
  %one = tessel.constant dense<1.000000e+00> : tensor<f32>
  %2 = tessel.add %one, %1 : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %half = tessel.constant dense<5.000000e-01> : tensor<f32>
  %3 = tessel.mul %half, %2 : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = tessel.mul %x, %3 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %4, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}
