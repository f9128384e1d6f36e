// RUN: tessel-opt %s -tessel-propagate -split-input-file -verify-diagnostics | FileCheck %s

// A Megatron MLP: the column split of w1 flows through gelu; the row split
// of w2 shards the contraction, so the result is a pending sum. Batch dims
// follow the argument's dp split.
tessel.mesh @mesh ["dp"=2, "tp"=4]
// CHECK-LABEL: func.func @megatron_mlp
// CHECK-SAME: -> (tensor<8x64xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp"}, {}]>})
func.func @megatron_mlp(%x: tensor<8x64xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp"}, {}]>}) -> tensor<8x64xf32> {
  %w1 = tessel.weight "w1" {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>} : tensor<64x256xf32>
  %w2 = tessel.weight "w2" {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}, {}]>} : tensor<256x64xf32>
  // CHECK: tessel.matmul {{.*}}#tessel.sharding<@mesh, [{"dp"}, {"tp"}]>
  %h = tessel.matmul %x, %w1 : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
  // CHECK: tessel.gelu {{.*}}#tessel.sharding<@mesh, [{"dp"}, {"tp"}]>
  %g = tessel.gelu %h : tensor<8x256xf32>
  // CHECK: tessel.matmul {{.*}}#tessel.sharding<@mesh, [{"dp"}, {}], partial = [sum("tp")]>
  %y = tessel.matmul %g, %w2 : (tensor<8x256xf32>, tensor<256x64xf32>) -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

// Backward: the result spec reaches the argument through exp and transpose.
tessel.mesh @mesh ["tp"=4]
// CHECK-LABEL: func.func @backward
// CHECK-SAME: %x: tensor<16x8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>}
func.func @backward(%x: tensor<16x8xf32>) -> (tensor<8x16xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}, {}]>}) {
  // CHECK: tessel.exp {{.*}}#tessel.sharding<@mesh, [{}, {"tp"}]>
  %0 = tessel.exp %x : tensor<16x8xf32>
  // CHECK: tessel.transpose {{.*}}#tessel.sharding<@mesh, [{"tp"}, {}]>
  %1 = tessel.transpose %0 perm = [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// -----

// A reshape's compound dim: splitting d = 768 over tp splits the head
// factor (12) of [b, t, 12, 64]; back through the merging reshape.
tessel.mesh @mesh ["tp"=4]
// CHECK-LABEL: func.func @heads
func.func @heads(%x: tensor<2x32x768xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {}, {"tp"}]>}) -> tensor<2x32x768xf32> {
  // CHECK: tessel.reshape {{.*}}#tessel.sharding<@mesh, [{}, {}, {"tp"}, {}]>
  %0 = tessel.reshape %x : (tensor<2x32x768xf32>) -> tensor<2x32x12x64xf32>
  // CHECK: tessel.transpose {{.*}}#tessel.sharding<@mesh, [{}, {"tp"}, {}, {}]>
  %1 = tessel.transpose %0 perm = [0, 2, 1, 3] : (tensor<2x32x12x64xf32>) -> tensor<2x12x32x64xf32>
  // CHECK: tessel.softmax {{.*}}#tessel.sharding<@mesh, [{}, {"tp"}, {}, {}]>
  %2 = tessel.softmax %1 axis = 3 : tensor<2x12x32x64xf32>
  %3 = tessel.transpose %2 perm = [0, 2, 1, 3] : (tensor<2x12x32x64xf32>) -> tensor<2x32x12x64xf32>
  // CHECK: tessel.reshape {{.*}}#tessel.sharding<@mesh, [{}, {}, {"tp"}]>
  %4 = tessel.reshape %3 : (tensor<2x32x12x64xf32>) -> tensor<2x32x768xf32>
  return %4 : tensor<2x32x768xf32>
}

// -----

// Axes that do not divide the major factor do not cross the reshape: tp=8
// does not divide 12 heads.
tessel.mesh @mesh ["tp"=8]
// CHECK-LABEL: func.func @heads_not_divisible
func.func @heads_not_divisible(%x: tensor<2x768xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>}) -> tensor<2x12x64xf32> {
  // CHECK: tessel.reshape {{.*}}#tessel.sharding<@mesh, [{}, {}, {}]>
  %0 = tessel.reshape %x : (tensor<2x768xf32>) -> tensor<2x12x64xf32>
  return %0 : tensor<2x12x64xf32>
}

// -----

// need_replication: the softmax axis never carries the split; the result of
// the softmax takes none.
tessel.mesh @mesh ["tp"=4]
// CHECK-LABEL: func.func @need_replication
func.func @need_replication(%x: tensor<8x16xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>}) -> tensor<8x16xf32> {
  // CHECK: tessel.softmax {{.*}}#tessel.sharding<@mesh, [{}, {}]>
  %0 = tessel.softmax %x axis = 1 : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// Reduction kinds: max for reduce_max, mean for reduce_mean.
tessel.mesh @mesh ["tp"=4]
// CHECK-LABEL: func.func @reduction_kinds
func.func @reduction_kinds(%x: tensor<8x16xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>}) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  // CHECK: tessel.reduce_max {{.*}}partial = [max("tp")]
  %0 = tessel.reduce_max %x dims = [1] : (tensor<8x16xf32>) -> tensor<8xf32>
  // CHECK: tessel.reduce_mean {{.*}}partial = [mean("tp")]
  %1 = tessel.reduce_mean %x dims = [1] : (tensor<8x16xf32>) -> tensor<8xf32>
  // CHECK: tessel.reduce_sum {{.*}}partial = [sum("tp")]
  %2 = tessel.reduce_sum %x dims = [1] : (tensor<8x16xf32>) -> tensor<8xf32>
  return %0, %1, %2 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// A constraint pins its value and propagates both ways; user specs are
// never changed.
tessel.mesh @mesh ["dp"=2, "tp"=4]
// CHECK-LABEL: func.func @constraint
// CHECK-SAME: %x: tensor<8x16xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp"}, {}]>}
func.func @constraint(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // CHECK: tessel.exp {{.*}}#tessel.sharding<@mesh, [{"dp"}, {}]>
  %0 = tessel.exp %x : tensor<8x16xf32>
  // CHECK: tessel.shard_constraint {{.*}}#tessel.sharding<@mesh, [{"dp"}, {}]>
  %1 = tessel.shard_constraint %0 <@mesh, [{"dp"}, {}]> : tensor<8x16xf32>
  // CHECK: tessel.neg {{.*}}#tessel.sharding<@mesh, [{"dp"}, {}]>
  %2 = tessel.neg %1 : tensor<8x16xf32>
  return %2 : tensor<8x16xf32>
}

// -----

// Two specs disagree on a factor: the one that reshards fewer bytes wins
// (moving the [8, 1] operand, 32 bytes, not the [8, 16] one), and a remark
// says so.
tessel.mesh @mesh ["dp"=2, "tp"=4]
// CHECK-LABEL: func.func @conflict
func.func @conflict(%a: tensor<8x16xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp"}, {}]>},
                    %b: tensor<8x1024xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}, {}]>}) -> tensor<8x16xf32> {
  %r = tessel.reduce_sum %b dims = [1] : (tensor<8x1024xf32>) -> tensor<8xf32>
  %e = tessel.reshape %r : (tensor<8xf32>) -> tensor<8x1xf32>
  // expected-remark @+2 {{conflicting shardings of factor 'i' (size 8): operand 0 wants {"dp"}; operand 1 wants {"tp"}; chose {"dp"} (32 bytes resharded, the cheapest candidate)}}
  // CHECK: tessel.add {{.*}}#tessel.sharding<@mesh, [{"dp"}, {}]>
  %s = tessel.add %a, %e : (tensor<8x16xf32>, tensor<8x1xf32>) -> tensor<8x16xf32>
  return %s : tensor<8x16xf32>
}

// -----

// A value gathered for one user (the layer norm needs its last dim whole)
// does not pass its split on to its other users: the residual stream of a
// transformer stays replicated after the embedding.
tessel.mesh @mesh ["tp"=4]
// CHECK-LABEL: func.func @gathered_anyway
func.func @gathered_anyway(%x: tensor<4x64xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>}, %g: tensor<64xf32>) -> tensor<4x64xf32> {
  // CHECK: tessel.layer_norm {{.*}}#tessel.sharding<@mesh, [{}, {}]>
  %n = tessel.layer_norm %x, %g axis = 1 : (tensor<4x64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
  // CHECK: tessel.add {{.*}}#tessel.sharding<@mesh, [{}, {}]>
  %r = tessel.add %x, %n : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
  return %r : tensor<4x64xf32>
}

// -----

// A pad travels with a dim that is one factor alone.
tessel.mesh @mesh ["tp"=4]
// CHECK-LABEL: func.func @pad
func.func @pad(%x: tensor<30x8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp", pad = 2}, {}]>}) -> tensor<30x8xf32> {
  // CHECK: tessel.exp {{.*}}#tessel.sharding<@mesh, [{"tp", pad = 2}, {}]>
  %0 = tessel.exp %x : tensor<30x8xf32>
  return %0 : tensor<30x8xf32>
}

// -----

// An op without a rule is a barrier: its result stays replicated.
tessel.mesh @mesh ["tp"=4]
// CHECK-LABEL: func.func @barrier
func.func @barrier(%x: tensor<8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}]>}) -> tensor<8xf32> {
  // expected-warning @+2 {{'arith.addf' declares no sharding rule; it is a propagation barrier and its results stay replicated}}
  // CHECK: arith.addf {{.*}}#tessel.sharding<@mesh, [{}]>
  %0 = arith.addf %x, %x : tensor<8xf32>
  // CHECK: tessel.exp {{.*}}#tessel.sharding<@mesh, [{}]>
  %1 = tessel.exp %0 : tensor<8xf32>
  return %1 : tensor<8xf32>
}

// -----

// GPT-2's fused q, k, v projection: the split of the column-split output
// moves up to three weight slices, each column-split, so that no rank needs
// the whole fused output.
tessel.mesh @mesh ["tp"=4]
// CHECK-LABEL: func.func @fused_qkv
func.func @fused_qkv(%x: tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>) {
  %w = tessel.weight "c_attn.weight" {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>} : tensor<64x192xf32>
  %b = tessel.weight "c_attn.bias" {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}]>} : tensor<192xf32>
  %0 = tessel.matmul %x, %w : (tensor<2x8x64xf32>, tensor<64x192xf32>) -> tensor<2x8x192xf32>
  %1 = tessel.add %0, %b : (tensor<2x8x192xf32>, tensor<192xf32>) -> tensor<2x8x192xf32>
  // CHECK-NOT: tessel.split
  // CHECK: tessel.weight "c_attn.weight" {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>, tessel.source_slice = array<i64: 1, 0, 64>} : tensor<64x64xf32>
  // CHECK: tessel.matmul {{.*}}#tessel.sharding<@mesh, [{}, {}, {"tp"}]>
  // CHECK: tessel.weight "c_attn.bias" {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}]>, tessel.source_slice = array<i64: 0, 0, 64>} : tensor<64xf32>
  // CHECK: tessel.add {{.*}}#tessel.sharding<@mesh, [{}, {}, {"tp"}]>
  // CHECK: tessel.source_slice = array<i64: 1, 64, 128>
  // CHECK: tessel.source_slice = array<i64: 1, 128, 192>
  // CHECK-NOT: tessel.split
  %q, %k, %v = tessel.split %1 dim = 2 sizes = [64, 64, 64] : (tensor<2x8x192xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>)
  return %q, %k, %v : tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>
}
