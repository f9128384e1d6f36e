// RUN: tessel-opt %s -tessel-master-weights | FileCheck %s

// A trainable bf16 weight becomes its f32 master, read through a cast to
// bf16 (the working copy) by every reader; a frozen half weight and an f32
// weight stay as they are.
// CHECK-LABEL: func.func @step
// CHECK: %[[M:.*]] = tessel.weight "fc.weight" : tensor<4x4xf32>
// CHECK-NEXT: %[[W:.*]] = tessel.cast %[[M]] : tensor<4x4xf32> -> tensor<4x4xbf16>
// CHECK: %[[T:.*]] = tessel.weight "table" : tensor<4x4xf16>
// CHECK-NOT: tessel.cast %[[T]]
// CHECK: %[[B:.*]] = tessel.weight "fc.bias" : tensor<4xf32>
// CHECK-NOT: tessel.cast %[[B]]
// CHECK: tessel.matmul %{{.*}}, %[[W]]
// CHECK: tessel.mul %[[W]], %[[W]]
module attributes {tessel.trainable = ["fc.weight", "fc.bias"]} {
  func.func @step(%x: tensor<2x4xbf16>) -> (tensor<2x4xbf16>, tensor<4x4xbf16>, tensor<4x4xf16>, tensor<4xf32>) {
    %w = tessel.weight "fc.weight" : tensor<4x4xbf16>
    %t = tessel.weight "table" : tensor<4x4xf16>
    %b = tessel.weight "fc.bias" : tensor<4xf32>
    %y = tessel.matmul %x, %w : (tensor<2x4xbf16>, tensor<4x4xbf16>) -> tensor<2x4xbf16>
    %s = tessel.mul %w, %w : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
    return %y, %s, %t, %b : tensor<2x4xbf16>, tensor<4x4xbf16>, tensor<4x4xf16>, tensor<4xf32>
  }
}
