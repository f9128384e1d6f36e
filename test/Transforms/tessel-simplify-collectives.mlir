// RUN: tessel-opt %s -tessel-simplify-collectives -split-input-file | FileCheck %s

tessel.mesh @mesh ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @all_reduce_then_slice
// CHECK-SAME: (%[[Y:.*]]: tensor<8x32xf32>)
// CHECK-NEXT: %[[S:.*]] = tessel.reduce_scatter sum %[[Y]] on @mesh axes = ["tp"] dim = 0 : (tensor<8x32xf32>) -> tensor<2x32xf32>
// CHECK-NEXT: return %[[S]]
func.func @all_reduce_then_slice(%y: tensor<8x32xf32>) -> tensor<2x32xf32> {
  %r = tessel.all_reduce sum %y on @mesh axes = ["tp"] : tensor<8x32xf32>
  %s = tessel.local_slice %r on @mesh axes = ["tp"] dim = 0 : (tensor<8x32xf32>) -> tensor<2x32xf32>
  return %s : tensor<2x32xf32>
}

// The all_reduce has another use: it must stay.
// CHECK-LABEL: func.func @all_reduce_used_twice
// CHECK: tessel.all_reduce
// CHECK: tessel.local_slice
// CHECK-NOT: tessel.reduce_scatter
func.func @all_reduce_used_twice(%y: tensor<8x32xf32>) -> (tensor<2x32xf32>, tensor<8x32xf32>) {
  %r = tessel.all_reduce sum %y on @mesh axes = ["tp"] : tensor<8x32xf32>
  %s = tessel.local_slice %r on @mesh axes = ["tp"] dim = 0 : (tensor<8x32xf32>) -> tensor<2x32xf32>
  return %s, %r : tensor<2x32xf32>, tensor<8x32xf32>
}

// Other axes: no rewrite.
// CHECK-LABEL: func.func @other_axes
// CHECK: tessel.all_reduce sum %{{.*}} on @mesh axes = ["dp"]
// CHECK: tessel.local_slice
func.func @other_axes(%y: tensor<8x32xf32>) -> tensor<2x32xf32> {
  %r = tessel.all_reduce sum %y on @mesh axes = ["dp"] : tensor<8x32xf32>
  %s = tessel.local_slice %r on @mesh axes = ["tp"] dim = 0 : (tensor<8x32xf32>) -> tensor<2x32xf32>
  return %s : tensor<2x32xf32>
}

// A gather undone by a slice of the same dim is a no-op reshard.
// CHECK-LABEL: func.func @slice_of_gather
// CHECK-SAME: (%[[X:.*]]: tensor<8x8xf32>)
// CHECK-NEXT: return %[[X]]
func.func @slice_of_gather(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %g = tessel.all_gather %x on @mesh axes = ["tp"] dim = 1 : (tensor<8x8xf32>) -> tensor<8x32xf32>
  %s = tessel.local_slice %g on @mesh axes = ["tp"] dim = 1 : (tensor<8x32xf32>) -> tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}

// A slice of another dim than the gather's stays.
// CHECK-LABEL: func.func @slice_of_gather_other_dim
// CHECK: tessel.all_gather
// CHECK: tessel.local_slice
func.func @slice_of_gather_other_dim(%x: tensor<8x8xf32>) -> tensor<2x32xf32> {
  %g = tessel.all_gather %x on @mesh axes = ["tp"] dim = 1 : (tensor<8x8xf32>) -> tensor<8x32xf32>
  %s = tessel.local_slice %g on @mesh axes = ["tp"] dim = 0 : (tensor<8x32xf32>) -> tensor<2x32xf32>
  return %s : tensor<2x32xf32>
}

// A slice gathered back is the replicated value.
// CHECK-LABEL: func.func @gather_of_slice
// CHECK-SAME: (%[[X:.*]]: tensor<8x32xf32>)
// CHECK-NEXT: return %[[X]]
func.func @gather_of_slice(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %s = tessel.local_slice %x on @mesh axes = ["tp"] dim = 1 : (tensor<8x32xf32>) -> tensor<8x8xf32>
  %g = tessel.all_gather %s on @mesh axes = ["tp"] dim = 1 : (tensor<8x8xf32>) -> tensor<8x32xf32>
  return %g : tensor<8x32xf32>
}

// Two reductions of one kind over different axes are one.
// CHECK-LABEL: func.func @nested_all_reduce
// CHECK-NEXT: %[[R:.*]] = tessel.all_reduce sum %{{.*}} on @mesh axes = ["tp", "dp"] : tensor<8xf32>
// CHECK-NEXT: return %[[R]]
func.func @nested_all_reduce(%x: tensor<8xf32>) -> tensor<8xf32> {
  %a = tessel.all_reduce sum %x on @mesh axes = ["tp"] : tensor<8xf32>
  %b = tessel.all_reduce sum %a on @mesh axes = ["dp"] : tensor<8xf32>
  return %b : tensor<8xf32>
}

// Different kinds, or the same axis twice, are not merged.
// CHECK-LABEL: func.func @nested_all_reduce_kinds
// CHECK: tessel.all_reduce sum
// CHECK: tessel.all_reduce max
// CHECK: tessel.all_reduce sum
// CHECK: tessel.all_reduce sum
func.func @nested_all_reduce_kinds(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %a = tessel.all_reduce sum %x on @mesh axes = ["tp"] : tensor<8xf32>
  %b = tessel.all_reduce max %a on @mesh axes = ["dp"] : tensor<8xf32>
  %c = tessel.all_reduce sum %x on @mesh axes = ["tp"] : tensor<8xf32>
  %d = tessel.all_reduce sum %c on @mesh axes = ["tp"] : tensor<8xf32>
  return %b, %d : tensor<8xf32>, tensor<8xf32>
}

// -----

tessel.mesh @mesh ["dp"=1, "tp"=2]

// Collectives over a group of one device move nothing.
// CHECK-LABEL: func.func @trivial_group
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>)
// CHECK-NEXT: %[[R:.*]] = tessel.all_reduce sum %[[X]] on @mesh axes = ["tp"]
// CHECK-NEXT: return %[[R]]
func.func @trivial_group(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %a = tessel.all_reduce sum %x on @mesh axes = ["dp"] : tensor<8x4xf32>
  %g = tessel.all_gather %a on @mesh axes = ["dp"] dim = 0 : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %s = tessel.local_slice %g on @mesh axes = ["dp"] dim = 1 : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %r = tessel.all_reduce sum %s on @mesh axes = ["tp"] : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}
