// RUN: tessel-opt %s -tessel-propagate -tessel-partition -split-input-file | FileCheck %s

// A Megatron MLP: local shapes, one all_reduce after the row-parallel
// matmul, nothing else; weights keep their global spec for the exporter.
tessel.mesh @mesh ["dp"=2, "tp"=4]
// CHECK-LABEL: func.func @megatron_mlp
// CHECK-SAME: (%[[X:.*]]: tensor<4x64xf32>) -> tensor<4x64xf32>
// CHECK-SAME: tessel.global_arg_shardings = [#tessel.sharding<@mesh, [{"dp"}, {}]>]
func.func @megatron_mlp(%x: tensor<8x64xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp"}, {}]>}) -> tensor<8x64xf32> {
  // CHECK: %[[W1:.*]] = tessel.weight "w1" {tessel.global_sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>} : tensor<64x64xf32>
  // CHECK: %[[W2:.*]] = tessel.weight "w2" {tessel.global_sharding = #tessel.sharding<@mesh, [{"tp"}, {}]>} : tensor<64x64xf32>
  %w1 = tessel.weight "w1" {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>} : tensor<64x256xf32>
  %w2 = tessel.weight "w2" {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}, {}]>} : tensor<256x64xf32>
  // CHECK-NOT: tessel.all_
  // CHECK: %[[H:.*]] = tessel.matmul %[[X]], %[[W1]] : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
  %h = tessel.matmul %x, %w1 : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
  // CHECK: %[[G:.*]] = tessel.gelu %[[H]] : tensor<4x64xf32>
  %g = tessel.gelu %h : tensor<8x256xf32>
  // CHECK: %[[Y:.*]] = tessel.matmul %[[G]], %[[W2]]
  %y = tessel.matmul %g, %w2 : (tensor<8x256xf32>, tensor<256x64xf32>) -> tensor<8x64xf32>
  // CHECK: %[[R:.*]] = tessel.all_reduce sum %[[Y]] on @mesh axes = ["tp"] : tensor<4x64xf32>
  // CHECK-NOT: tessel.all_
  // CHECK: return %[[R]] : tensor<4x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

// A partial sum whose user wants the dim split over the partial axis:
// reduce_scatter, not all_reduce. Then a split moving from dim 0 to dim 1:
// all_to_all.
tessel.mesh @mesh ["tp"=4]
// CHECK-LABEL: func.func @reduce_scatter_all_to_all
// CHECK-SAME: -> tensor<8x16xf32>
func.func @reduce_scatter_all_to_all(%x: tensor<8x256xf32>, %w: tensor<256x64xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}, {}]>}) -> tensor<8x64xf32> {
  // CHECK: %[[Y:.*]] = tessel.matmul
  %y = tessel.matmul %x, %w : (tensor<8x256xf32>, tensor<256x64xf32>) -> tensor<8x64xf32>
  // CHECK-NOT: tessel.all_reduce
  // CHECK: %[[S:.*]] = tessel.reduce_scatter sum %[[Y]] on @mesh axes = ["tp"] dim = 0 : (tensor<8x64xf32>) -> tensor<2x64xf32>
  %z = tessel.shard_constraint %y <@mesh, [{"tp"}, {}]> : tensor<8x64xf32>
  // CHECK: %[[A:.*]] = tessel.all_to_all %[[S]] on @mesh axes = ["tp"] split_dim = 1 concat_dim = 0 : (tensor<2x64xf32>) -> tensor<8x16xf32>
  %a = tessel.shard_constraint %z <@mesh, [{}, {"tp"}]> : tensor<8x64xf32>
  // CHECK: tessel.exp %[[A]] : tensor<8x16xf32>
  %b = tessel.exp %a : tensor<8x64xf32>
  return %b : tensor<8x64xf32>
}

// -----

// A split the softmax axis cannot keep: all_gather. A split the result
// wants of a replicated value: local_slice (no communication). A split that
// moves between dims: all_to_all.
tessel.mesh @mesh ["tp"=4]
// CHECK-LABEL: func.func @gather_slice_all_to_all
func.func @gather_slice_all_to_all(%x: tensor<8x16xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>},
                                   %y: tensor<8x16xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {}]>})
    -> (tensor<8x16xf32>, tensor<8x16xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}, {}]>},
        tensor<8x16xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}, {}]>}) {
  // Reshards of an argument go to the top of the body.
  // CHECK-DAG: %[[G:.*]] = tessel.all_gather %x on @mesh axes = ["tp"] dim = 1 : (tensor<8x4xf32>) -> tensor<8x16xf32>
  // CHECK-DAG: %[[L:.*]] = tessel.local_slice %y on @mesh axes = ["tp"] dim = 0 : (tensor<8x16xf32>) -> tensor<2x16xf32>
  // CHECK-DAG: %[[A:.*]] = tessel.all_to_all %x on @mesh axes = ["tp"] split_dim = 0 concat_dim = 1 : (tensor<8x4xf32>) -> tensor<2x16xf32>
  // CHECK: %[[S:.*]] = tessel.softmax %[[G]] axis = 1 : tensor<8x16xf32>
  %0 = tessel.softmax %x axis = 1 : tensor<8x16xf32>
  // CHECK: %[[E:.*]] = tessel.exp %[[L]] : tensor<2x16xf32>
  %1 = tessel.exp %y : tensor<8x16xf32>
  // CHECK: %[[N:.*]] = tessel.neg %[[A]] : tensor<2x16xf32>
  %2 = tessel.neg %x : tensor<8x16xf32>
  // CHECK: return %[[S]], %[[E]], %[[N]]
  return %0, %1, %2 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

// A value resharded for several users is resharded once, right after its
// definition.
tessel.mesh @mesh ["tp"=4]
// CHECK-LABEL: func.func @reshard_once
func.func @reshard_once(%x: tensor<4x64xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>}, %g: tensor<64xf32>) -> tensor<4x64xf32> {
  // CHECK: %[[E:.*]] = tessel.exp %x : tensor<4x16xf32>
  // CHECK-NEXT: %[[A:.*]] = tessel.all_gather %[[E]] on @mesh axes = ["tp"] dim = 1
  // CHECK-NOT: tessel.all_gather
  // CHECK: tessel.layer_norm %[[A]]
  // CHECK: tessel.add %[[A]]
  %e = tessel.exp %x : tensor<4x64xf32>
  %n = tessel.layer_norm %e, %g axis = 1 : (tensor<4x64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
  %r = tessel.add %e, %n : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
  return %r : tensor<4x64xf32>
}

// -----

// A padded dim: 30 rows over tp=4 are 8 per rank; gathering drops the pad.
tessel.mesh @mesh ["tp"=4]
// CHECK-LABEL: func.func @pad
// CHECK-SAME: (%x: tensor<8x8xf32>) -> tensor<30x8xf32>
func.func @pad(%x: tensor<30x8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp", pad = 2}, {}]>}) -> (tensor<30x8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {}]>}) {
  // CHECK: %[[E:.*]] = tessel.exp %x : tensor<8x8xf32>
  %y = tessel.exp %x : tensor<30x8xf32>
  // CHECK: %[[G:.*]] = tessel.all_gather %[[E]] on @mesh axes = ["tp"] dim = 0 : (tensor<8x8xf32>) -> tensor<32x8xf32>
  // CHECK: tessel.slice %[[G]] [0:30:1, 0:8:1] : (tensor<32x8xf32>) -> tensor<30x8xf32>
  return %y : tensor<30x8xf32>
}

// -----

// Two axes on one dim, and the head reshape: local shapes follow the
// compound factors; slices and splat constants take local shapes.
tessel.mesh @mesh ["dp"=2, "tp"=2]
// CHECK-LABEL: func.func @local_shapes
func.func @local_shapes(%x: tensor<8x32x64xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp", "tp"}, {}, {}]>}) -> tensor<8x32x4x16xf32> {
  // CHECK: tessel.reshape %x : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
  %0 = tessel.reshape %x : (tensor<8x32x64xf32>) -> tensor<8x32x4x16xf32>
  // CHECK: tessel.constant dense<2.000000e+00> : tensor<2x32x4x16xf32>
  %c = tessel.constant dense<2.0> : tensor<8x32x4x16xf32>
  %1 = tessel.mul %0, %c : (tensor<8x32x4x16xf32>, tensor<8x32x4x16xf32>) -> tensor<8x32x4x16xf32>
  // CHECK: tessel.slice {{.*}} [0:2:1, 0:32:1, 0:4:1, 0:16:1]
  %2 = tessel.slice %1 [0:8:1, 0:32:1, 0:4:1, 0:16:1] : (tensor<8x32x4x16xf32>) -> tensor<8x32x4x16xf32>
  return %2 : tensor<8x32x4x16xf32>
}

// -----

// Gradient accumulation: two partial sums over dp (each a matmul that
// contracts the dp-split batch) added, then reshaped: the add and the
// reshape keep the partial sum, and one all_reduce follows them, not one
// per addend.
tessel.mesh @mesh ["dp"=2]
// CHECK-LABEL: func.func @sum_of_partials
func.func @sum_of_partials(%a: tensor<64x8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp"}, {}]>},
                           %b: tensor<64x8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp"}, {}]>},
                           %g: tensor<64x16xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp"}, {}]>}) -> tensor<128xf32> {
  // CHECK: %[[P0:.*]] = tessel.matmul %{{.*}}, %{{.*}} : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  // CHECK: %[[P1:.*]] = tessel.matmul
  // CHECK-NOT: tessel.all_reduce
  // CHECK: %[[S:.*]] = tessel.add %[[P0]], %[[P1]] :
  // CHECK-NOT: tessel.all_reduce
  // CHECK: %[[R:.*]] = tessel.reshape %[[S]] : (tensor<8x16xf32>) -> tensor<128xf32>
  // CHECK: tessel.all_reduce sum %[[R]] on @mesh axes = ["dp"] : tensor<128xf32>
  // CHECK-NOT: tessel.all_reduce
  %at = tessel.transpose %a perm = [1, 0] : (tensor<64x8xf32>) -> tensor<8x64xf32>
  %bt = tessel.transpose %b perm = [1, 0] : (tensor<64x8xf32>) -> tensor<8x64xf32>
  %p0 = tessel.matmul %at, %g : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32>
  %p1 = tessel.matmul %bt, %g : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32>
  %s = tessel.add %p0, %p1 : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %r = tessel.reshape %s : (tensor<8x16xf32>) -> tensor<128xf32>
  return %r : tensor<128xf32>
}
