// RUN: tessel-opt %s -tessel-propagate -tessel-partition -split-input-file -verify-diagnostics | FileCheck %s

// Reshapes whose result splits the major, middle or minor factor of a
// compound dim ([seq*batch, d] -> [seq, batch, d] is PyTorch's attention
// layout, the batch split over dp), operand replicated or split. A minor or
// middle factor takes strided rows of the operand: the partitioner reshapes
// the operand into one dim per factor, slices or exchanges there, and
// reshapes into the local result; never an invalid reshape. The numbers:
// test/E2E/reshape-factors.test.

// Minor factor, operand replicated: a local strided slice.
tessel.mesh @mesh ["dp"=2]
// CHECK-LABEL: func.func @minor_replicated
// CHECK-SAME: (%x: tensor<34x96xf32>) -> tensor<17x1x96xf32>
func.func @minor_replicated(%x: tensor<34x96xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {}]>}) -> tensor<17x2x96xf32> {
  // CHECK-NOT: tessel.all_
  // CHECK: %[[E:.*]] = tessel.reshape %x : (tensor<34x96xf32>) -> tensor<17x2x96xf32>
  // CHECK: %[[S:.*]] = tessel.local_slice %[[E]] on @mesh axes = ["dp"] dim = 1 : (tensor<17x2x96xf32>) -> tensor<17x1x96xf32>
  // CHECK: %[[R:.*]] = tessel.reshape %[[S]] : (tensor<17x1x96xf32>) -> tensor<17x1x96xf32>
  // CHECK-NOT: tessel.all_
  // CHECK: return %[[R]]
  %r = tessel.reshape %x : (tensor<34x96xf32>) -> tensor<17x2x96xf32>
  %c = tessel.shard_constraint %r <@mesh, [{}, {"dp"}, {}]> : tensor<17x2x96xf32>
  return %c : tensor<17x2x96xf32>
}

// -----

// Minor factor, operand split in blocks of its major factor: all_to_all.
tessel.mesh @mesh ["dp"=2]
// CHECK-LABEL: func.func @minor_sharded
// CHECK-SAME: (%x: tensor<8x96xf32>) -> tensor<8x1x96xf32>
func.func @minor_sharded(%x: tensor<16x96xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp"}, {}]>}) -> tensor<8x2x96xf32> {
  // CHECK-NOT: tessel.all_gather
  // CHECK: %[[E:.*]] = tessel.reshape %x : (tensor<8x96xf32>) -> tensor<4x2x96xf32>
  // CHECK: %[[A:.*]] = tessel.all_to_all %[[E]] on @mesh axes = ["dp"] split_dim = 1 concat_dim = 0 : (tensor<4x2x96xf32>) -> tensor<8x1x96xf32>
  // CHECK-NOT: tessel.all_gather
  // CHECK: return
  %r = tessel.reshape %x : (tensor<16x96xf32>) -> tensor<8x2x96xf32>
  %c = tessel.shard_constraint %r <@mesh, [{}, {"dp"}, {}]> : tensor<8x2x96xf32>
  return %c : tensor<8x2x96xf32>
}

// -----

// Middle factor, operand replicated.
tessel.mesh @mesh ["dp"=2]
// CHECK-LABEL: func.func @middle_replicated
// CHECK-SAME: -> tensor<4x1x3x8xf32>
func.func @middle_replicated(%x: tensor<24x8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {}]>}) -> tensor<4x2x3x8xf32> {
  // CHECK-NOT: tessel.all_
  // CHECK: %[[E:.*]] = tessel.reshape %x : (tensor<24x8xf32>) -> tensor<4x2x3x8xf32>
  // CHECK: %[[S:.*]] = tessel.local_slice %[[E]] on @mesh axes = ["dp"] dim = 1 : (tensor<4x2x3x8xf32>) -> tensor<4x1x3x8xf32>
  // CHECK: tessel.reshape %[[S]] : (tensor<4x1x3x8xf32>) -> tensor<4x1x3x8xf32>
  // CHECK-NOT: tessel.all_
  %r = tessel.reshape %x : (tensor<24x8xf32>) -> tensor<4x2x3x8xf32>
  %c = tessel.shard_constraint %r <@mesh, [{}, {"dp"}, {}, {}]> : tensor<4x2x3x8xf32>
  return %c : tensor<4x2x3x8xf32>
}

// -----

// Middle factor, operand split in blocks of its major factor.
tessel.mesh @mesh ["dp"=2]
// CHECK-LABEL: func.func @middle_sharded
// CHECK-SAME: (%x: tensor<12x8xf32>) -> tensor<4x1x3x8xf32>
func.func @middle_sharded(%x: tensor<24x8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp"}, {}]>}) -> tensor<4x2x3x8xf32> {
  // CHECK-NOT: tessel.all_gather
  // CHECK: %[[E:.*]] = tessel.reshape %x : (tensor<12x8xf32>) -> tensor<2x2x3x8xf32>
  // CHECK: tessel.all_to_all %[[E]] on @mesh axes = ["dp"] split_dim = 1 concat_dim = 0 : (tensor<2x2x3x8xf32>) -> tensor<4x1x3x8xf32>
  // CHECK-NOT: tessel.all_gather
  %r = tessel.reshape %x : (tensor<24x8xf32>) -> tensor<4x2x3x8xf32>
  %c = tessel.shard_constraint %r <@mesh, [{}, {"dp"}, {}, {}]> : tensor<4x2x3x8xf32>
  return %c : tensor<4x2x3x8xf32>
}

// -----

// Major factor, operand replicated: the operand's block, then the reshape.
tessel.mesh @mesh ["dp"=2]
// CHECK-LABEL: func.func @major_replicated
func.func @major_replicated(%x: tensor<16x96xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {}]>}) -> tensor<8x2x96xf32> {
  // CHECK-NOT: tessel.all_
  // CHECK: %[[S:.*]] = tessel.local_slice %x on @mesh axes = ["dp"] dim = 0 : (tensor<16x96xf32>) -> tensor<8x96xf32>
  // CHECK: tessel.reshape %[[S]] : (tensor<8x96xf32>) -> tensor<4x2x96xf32>
  // CHECK-NOT: tessel.all_
  %r = tessel.reshape %x : (tensor<16x96xf32>) -> tensor<8x2x96xf32>
  %c = tessel.shard_constraint %r <@mesh, [{"dp"}, {}, {}]> : tensor<8x2x96xf32>
  return %c : tensor<8x2x96xf32>
}

// -----

// Major factor, operand split the same way: a local reshape, nothing else.
tessel.mesh @mesh ["dp"=2]
// CHECK-LABEL: func.func @major_sharded
func.func @major_sharded(%x: tensor<16x96xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp"}, {}]>}) -> tensor<8x2x96xf32> {
  // CHECK-NEXT: %[[R:.*]] = tessel.reshape %x : (tensor<8x96xf32>) -> tensor<4x2x96xf32>
  // CHECK-NEXT: return %[[R]]
  %r = tessel.reshape %x : (tensor<16x96xf32>) -> tensor<8x2x96xf32>
  %c = tessel.shard_constraint %r <@mesh, [{"dp"}, {}, {}]> : tensor<8x2x96xf32>
  return %c : tensor<8x2x96xf32>
}

// -----

// Minor factor, operand split in halves of 17 rows, which are not blocks of
// any factor: the dim is gathered, with a warning, then sliced.
tessel.mesh @mesh ["dp"=2]
// CHECK-LABEL: func.func @minor_sharded_odd
func.func @minor_sharded_odd(%x: tensor<34x96xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp"}, {}]>}) -> tensor<17x2x96xf32> {
  // CHECK: %[[G:.*]] = tessel.all_gather %x on @mesh axes = ["dp"] dim = 0 : (tensor<17x96xf32>) -> tensor<34x96xf32>
  // CHECK: %[[E:.*]] = tessel.reshape %[[G]] : (tensor<34x96xf32>) -> tensor<17x2x96xf32>
  // CHECK: tessel.local_slice %[[E]] on @mesh axes = ["dp"] dim = 1 : (tensor<17x2x96xf32>) -> tensor<17x1x96xf32>
  // expected-warning @below {{gathers dim 0 of argument 0 (size 34, pad 0, split over {"dp"}): its blocks are not blocks of the factors the reshape splits}}
  %r = tessel.reshape %x : (tensor<34x96xf32>) -> tensor<17x2x96xf32>
  %c = tessel.shard_constraint %r <@mesh, [{}, {"dp"}, {}]> : tensor<17x2x96xf32>
  return %c : tensor<17x2x96xf32>
}

// -----

// The way back, [seq, batch, d] -> [seq*batch, d] with the batch split: a
// dim splits only in blocks, so the result cannot keep the split. The
// operand is gathered, and a warning says so.
tessel.mesh @mesh ["dp"=2]
// CHECK-LABEL: func.func @merge_minor
func.func @merge_minor(%x: tensor<8x2x96xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"dp"}, {}]>}) -> tensor<16x96xf32> {
  // CHECK: %[[G:.*]] = tessel.all_gather %x on @mesh axes = ["dp"] dim = 1 : (tensor<8x1x96xf32>) -> tensor<8x2x96xf32>
  // CHECK: tessel.reshape %[[G]] : (tensor<8x2x96xf32>) -> tensor<16x96xf32>
  // expected-warning @below {{gathers dim 1 of argument 0 (split over {"dp"}): result dim 0 (size 16) holds that factor (size 2) after an unsplit one, and a dim splits only in blocks, so the ops that follow run on the whole tensor}}
  %r = tessel.reshape %x : (tensor<8x2x96xf32>) -> tensor<16x96xf32>
  return %r : tensor<16x96xf32>
}

// -----

// A padded dim that is one factor alone keeps its pad through the dims per
// factor (5 over tp=2 is 3 per rank).
tessel.mesh @mesh ["dp"=2, "tp"=2]
// CHECK-LABEL: func.func @minor_with_padded_dim
// CHECK-SAME: (%x: tensor<34x3xf32>) -> tensor<17x1x3xf32>
func.func @minor_with_padded_dim(%x: tensor<34x5xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp", pad = 1}]>}) -> tensor<17x2x5xf32> {
  // CHECK-NOT: tessel.all_
  // CHECK: %[[E:.*]] = tessel.reshape %x : (tensor<34x3xf32>) -> tensor<17x2x3xf32>
  // CHECK: %[[S:.*]] = tessel.local_slice %[[E]] on @mesh axes = ["dp"] dim = 1 : (tensor<17x2x3xf32>) -> tensor<17x1x3xf32>
  // CHECK: tessel.reshape %[[S]] : (tensor<17x1x3xf32>) -> tensor<17x1x3xf32>
  // CHECK-NOT: tessel.all_
  %r = tessel.reshape %x : (tensor<34x5xf32>) -> tensor<17x2x5xf32>
  %c = tessel.shard_constraint %r <@mesh, [{}, {"dp"}, {"tp", pad = 1}]> : tensor<17x2x5xf32>
  return %c : tensor<17x2x5xf32>
}
