// -tessel-async-reduce-scatter (ZeRO stages 2 and 3): a reduce_scatter of
// the body whose result ops of the body read directly (the gradients') is
// marked tessel.async and stays where it is; one read through a
// shard_constraint (an alias, no instruction to wait before) stays
// synchronous.
// RUN: tessel-opt %s --tessel-async-reduce-scatter | FileCheck %s

module {
  tessel.mesh @mesh ["dp"=2]
  func.func @main(%g1: tensor<8xf32>, %g2: tensor<8xf32>, %g3: tensor<8xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %r1 = tessel.reduce_scatter sum %g1 on @mesh axes = ["dp"] dim = 0 : (tensor<8xf32>) -> tensor<4xf32>
    %m = tessel.mul %g2, %g2 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %r2 = tessel.reduce_scatter sum %m on @mesh axes = ["dp"] dim = 0 : (tensor<8xf32>) -> tensor<4xf32>
    %r3 = tessel.reduce_scatter sum %g3 on @mesh axes = ["dp"] dim = 0 : (tensor<8xf32>) -> tensor<4xf32>
    %c = tessel.shard_constraint %r3 <@mesh, [{"dp"}]> : tensor<4xf32>
    %s = tessel.add %r1, %r2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %s, %c : tensor<4xf32>, tensor<4xf32>
  }
}

// CHECK: %[[R1:.*]] = tessel.reduce_scatter sum %{{.*}} on @mesh axes = ["dp"] dim = 0 {tessel.async}
// CHECK-NEXT: %[[M:.*]] = tessel.mul
// CHECK-NEXT: %[[R2:.*]] = tessel.reduce_scatter sum %[[M]] on @mesh axes = ["dp"] dim = 0 {tessel.async}
// CHECK-NEXT: %[[R3:.*]] = tessel.reduce_scatter sum %{{.*}} on @mesh axes = ["dp"] dim = 0 : (tensor<8xf32>)
// CHECK-NEXT: tessel.shard_constraint %[[R3]]
// CHECK-NEXT: tessel.add %[[R1]], %[[R2]]
