// The sharding rule of every compute op, as -tessel-print-sharding-rules
// attaches it. Expected rules are written from the op semantics.
// RUN: tessel-opt %s -tessel-print-sharding-rules | FileCheck %s

// CHECK-LABEL: func.func @sources
func.func @sources() {
  // CHECK: tessel.weight {{.*}}#tessel.rule<() -> ([i, j]) {i=30, j=32}>
  %w = tessel.weight "w" : tensor<30x32xf32>
  // CHECK: tessel.constant {{.*}}#tessel.rule<() -> ([i]) {i=2}>
  %c = tessel.constant dense<[1.0, 2.0]> : tensor<2xf32>
  return
}

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: tensor<4x1xf32>, %b: tensor<5xf32>, %x: tensor<4x5xf32>,
                       %c: tensor<1x5xi1>, %s: tensor<f32>, %i: tensor<4x5xi64>) {
  // CHECK: tessel.exp {{.*}}#tessel.rule<([i, j]) -> ([i, j]) {i=4, j=5}>
  %0 = tessel.exp %x : tensor<4x5xf32>
  // CHECK: tessel.gelu {{.*}}#tessel.rule<([i, j]) -> ([i, j]) {i=4, j=5}>
  %1 = tessel.gelu %x : tensor<4x5xf32>
  // The size-1 dim of %a and the missing dim of %b are broadcast: no factor.
  // CHECK: tessel.add {{.*}}#tessel.rule<([i, 1], [j]) -> ([i, j]) {i=4, j=5}>
  %2 = tessel.add %a, %b : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  // CHECK: tessel.compare {{.*}}#tessel.rule<([i, j], [j]) -> ([i, j]) {i=4, j=5}>
  %3 = tessel.compare lt, %x, %b : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xi1>
  // CHECK: tessel.where {{.*}}#tessel.rule<([1, j], [i, j], []) -> ([i, j]) {i=4, j=5}>
  %4 = tessel.where %c, %x, %s : (tensor<1x5xi1>, tensor<4x5xf32>, tensor<f32>) -> tensor<4x5xf32>
  // CHECK: tessel.cast {{.*}}#tessel.rule<([i, j]) -> ([i, j]) {i=4, j=5}>
  %5 = tessel.cast %i : tensor<4x5xi64> -> tensor<4x5xf32>
  // CHECK: tessel.expand {{.*}}#tessel.rule<([i, 1]) -> ([i, j]) {i=4, j=5}>
  %6 = tessel.expand %a : (tensor<4x1xf32>) -> tensor<4x5xf32>
  return
}

// CHECK-LABEL: func.func @contractions
func.func @contractions(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>,
                        %q: tensor<2x4x8x16xf32>, %k: tensor<4x16x8xf32>,
                        %v: tensor<16xf32>, %w: tensor<32x16xf32>, %bias: tensor<32xf32>) {
  // CHECK: tessel.matmul {{.*}}#tessel.rule<([i, k], [k, j]) -> ([i, j]) {i=8, j=32, k=16} reduction={k}>
  %0 = tessel.matmul %a, %b : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  // Batch dims broadcast: %k has no dim for the leading batch factor.
  // CHECK: tessel.matmul {{.*}}#tessel.rule<([i, j, k, m], [j, m, l]) -> ([i, j, k, l]) {i=2, j=4, k=8, l=8, m=16} reduction={m}>
  %1 = tessel.matmul %q, %k : (tensor<2x4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<2x4x8x8xf32>
  // A vector rhs: the result loses the column dim.
  // CHECK: tessel.matmul {{.*}}#tessel.rule<([i, j, k, l], [l]) -> ([i, j, k]) {i=2, j=4, k=8, l=16} reduction={l}>
  %2 = tessel.matmul %q, %v : (tensor<2x4x8x16xf32>, tensor<16xf32>) -> tensor<2x4x8xf32>
  // CHECK: tessel.gemm {{.*}}#tessel.rule<([i, k], [j, k], [j]) -> ([i, j]) {i=8, j=32, k=16} reduction={k}>
  %3 = tessel.gemm %a, %w, %bias {trans_b} : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return
}

// CHECK-LABEL: func.func @reductions_and_norms
func.func @reductions_and_norms(%x: tensor<2x8x16xf32>, %g: tensor<16xf32>,
                                %img: tensor<4x3x8x8xf32>, %c: tensor<3xf32>) {
  // CHECK: tessel.reduce_sum {{.*}}#tessel.rule<([i, j, k]) -> ([i, 1, k]) {i=2, j=8, k=16} reduction={j}>
  %0 = tessel.reduce_sum %x dims = [1] keep_dims : (tensor<2x8x16xf32>) -> tensor<2x1x16xf32>
  // CHECK: tessel.reduce_mean {{.*}}#tessel.rule<([i, j, k]) -> ([j]) {i=2, j=8, k=16} reduction={i, k}>
  %1 = tessel.reduce_mean %x dims = [0, 2] : (tensor<2x8x16xf32>) -> tensor<8xf32>
  // CHECK: tessel.reduce_max {{.*}}#tessel.rule<([i, j, k]) -> ([i, j]) {i=2, j=8, k=16} reduction={k}>
  %2 = tessel.reduce_max %x dims = [2] : (tensor<2x8x16xf32>) -> tensor<2x8xf32>
  // CHECK: tessel.softmax {{.*}}#tessel.rule<([i, j, k]) -> ([i, j, k]) {i=2, j=8, k=16} need_replication={k}>
  %3 = tessel.softmax %x axis = 2 : tensor<2x8x16xf32>
  // CHECK: tessel.log_softmax {{.*}}#tessel.rule<([i, j, k]) -> ([i, j, k]) {i=2, j=8, k=16} need_replication={j}>
  %4 = tessel.log_softmax %x axis = 1 : tensor<2x8x16xf32>
  // CHECK: tessel.layer_norm {{.*}}#tessel.rule<([i, j, k], [k], [k]) -> ([i, j, k]) {i=2, j=8, k=16} need_replication={k}>
  %5 = tessel.layer_norm %x, %g, %g axis = 2 : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  // CHECK: tessel.rms_norm {{.*}}#tessel.rule<([i, j, k], [k]) -> ([i, j, k]) {i=2, j=8, k=16} need_replication={k}>
  %6 = tessel.rms_norm %x, %g axis = 2 : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  // CHECK: tessel.batch_norm {{.*}}#tessel.rule<([i, j, k, l], [j], [j], [j], [j]) -> ([i, j, k, l]) {i=4, j=3, k=8, l=8}>
  %7 = tessel.batch_norm %img, %c, %c, %c, %c : (tensor<4x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3x8x8xf32>
  return
}

// CHECK-LABEL: func.func @data_movement
func.func @data_movement(%wte: tensor<100x64xf32>, %ids: tensor<2x32xi64>,
                         %x: tensor<2x32x64xf32>, %y: tensor<2x16x64xf32>) {
  // The gathered (vocab) dim must stay replicated; the embedding dim passes.
  // CHECK: tessel.gather {{.*}}#tessel.rule<([l, k], [i, j]) -> ([i, j, k]) {i=2, j=32, k=64, l=100} need_replication={l}>
  %0 = tessel.gather %wte[%ids] axis = 0 : (tensor<100x64xf32>, tensor<2x32xi64>) -> tensor<2x32x64xf32>
  // Splitting d into heads: d is the compound factor (heads, head_dim).
  // CHECK: tessel.reshape {{.*}}#tessel.rule<([i, j, kl]) -> ([i, j, k, l]) {i=2, j=32, k=4, l=16}>
  %1 = tessel.reshape %x : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
  // CHECK: tessel.reshape {{.*}}#tessel.rule<([i, j, k, l]) -> ([ij, kl]) {i=2, j=32, k=4, l=16}>
  %2 = tessel.reshape %1 : (tensor<2x32x4x16xf32>) -> tensor<64x64xf32>
  // CHECK: tessel.transpose {{.*}}#tessel.rule<([i, j, k, l]) -> ([i, k, j, l]) {i=2, j=32, k=4, l=16}>
  %3 = tessel.transpose %1 perm = [0, 2, 1, 3] : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
  // A dim sliced to a new size gets an operand and a result factor, both replicated.
  // CHECK: tessel.slice {{.*}}#tessel.rule<([i, j, l]) -> ([i, k, l]) {i=2, j=32, k=16, l=64} need_replication={j, k}>
  %4 = tessel.slice %x [0:2:1, 0:32:2, 0:64:1] : (tensor<2x32x64xf32>) -> tensor<2x16x64xf32>
  // CHECK: tessel.concat {{.*}}#tessel.rule<([i, j, m], [i, k, m]) -> ([i, l, m]) {i=2, j=32, k=16, l=48, m=64} need_replication={j, k, l}>
  %5 = tessel.concat %x, %y dim = 1 : (tensor<2x32x64xf32>, tensor<2x16x64xf32>) -> tensor<2x48x64xf32>
  // CHECK: tessel.split {{.*}}#tessel.rule<([i, j, k]) -> ([i, j, l], [i, j, m]) {i=2, j=32, k=64, l=16, m=48} need_replication={k, l, m}>
  %6:2 = tessel.split %x dim = 2 sizes = [16, 48] : (tensor<2x32x64xf32>) -> (tensor<2x32x16xf32>, tensor<2x32x48xf32>)
  // CHECK: tessel.shard_constraint {{.*}}#tessel.rule<([i, j, k]) -> ([i, j, k]) {i=2, j=32, k=64}>
  %7 = tessel.shard_constraint %x <@mesh, [{}, {}, {}]> : tensor<2x32x64xf32>
  return
}

tessel.mesh @mesh ["tp"=2]

// CHECK-LABEL: func.func @conv_and_pool
func.func @conv_and_pool(%x: tensor<4x3x32x32xf32>, %w: tensor<16x3x3x3xf32>,
                         %b: tensor<16xf32>, %dw: tensor<16x1x3x3xf32>,
                         %y: tensor<4x16x32x32xf32>) {
  // Input channels are a reduction; output channels pass; windows replicate.
  // CHECK: tessel.conv2d {{.*}}#tessel.rule<([i, k, l, n], [j, k, p, q], [j]) -> ([i, j, m, o]) {i=4, j=16, k=3, l=32, m=32, n=32, o=32, p=3, q=3} reduction={k} need_replication={l, m, n, o, p, q}>
  %0 = tessel.conv2d %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<4x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<4x16x32x32xf32>
  // A grouped conv keeps its channels replicated.
  // CHECK: tessel.conv2d {{.*}}#tessel.rule<([i, k, m, o], [j, l, q, r]) -> ([i, j, n, p]) {i=4, j=16, k=16, l=1, m=32, n=30, o=32, p=30, q=3, r=3} need_replication={j, k, l, m, n, o, p, q, r}>
  %1 = tessel.conv2d %y, %dw {group = 16 : i64} : (tensor<4x16x32x32xf32>, tensor<16x1x3x3xf32>) -> tensor<4x16x30x30xf32>
  // CHECK: tessel.max_pool {{.*}}#tessel.rule<([i, j, k, m]) -> ([i, j, l, n]) {i=4, j=16, k=32, l=16, m=32, n=16} need_replication={k, l, m, n}>
  %2 = tessel.max_pool %y {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<4x16x32x32xf32>) -> tensor<4x16x16x16xf32>
  // CHECK: tessel.avg_pool {{.*}}#tessel.rule<([i, j, k, m]) -> ([i, j, l, n]) {i=4, j=16, k=32, l=16, m=32, n=16} need_replication={k, l, m, n}>
  %3 = tessel.avg_pool %y {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<4x16x32x32xf32>) -> tensor<4x16x16x16xf32>
  // CHECK: tessel.global_avg_pool {{.*}}#tessel.rule<([i, j, k, l]) -> ([i, j, 1, 1]) {i=4, j=16, k=32, l=32} reduction={k, l}>
  %4 = tessel.global_avg_pool %y : (tensor<4x16x32x32xf32>) -> tensor<4x16x1x1xf32>
  return
}

// CHECK-LABEL: func.func @conv_backward
func.func @conv_backward(%dy: tensor<4x16x16x16xf32>, %w: tensor<16x3x3x3xf32>,
                         %x: tensor<4x3x32x32xf32>, %gy: tensor<4x16x30x30xf32>,
                         %gw: tensor<16x1x3x3xf32>, %gx: tensor<4x16x32x32xf32>,
                         %bx: tensor<4x3x8x8xf32>, %c: tensor<3xf32>) {
  // dx: O is summed over, C passes from w to dx.
  // CHECK: tessel.conv2d_backward_data {{.*}}#tessel.rule<([i, j, l, n], [j, k, p, q]) -> ([i, k, m, o]) {i=4, j=16, k=3, l=16, m=32, n=16, o=32, p=3, q=3} reduction={j} need_replication={l, m, n, o, p, q}>
  %0 = tessel.conv2d_backward_data %dy, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<4x16x16x16xf32>, tensor<16x3x3x3xf32>) -> tensor<4x3x32x32xf32>
  // dw: the batch is summed over, O and C pass.
  // CHECK: tessel.conv2d_backward_weight {{.*}}#tessel.rule<([i, k, l, m], [i, j, n, o]) -> ([j, k, p, q]) {i=4, j=16, k=3, l=32, m=32, n=16, o=16, p=3, q=3} reduction={i} need_replication={l, m, n, o, p, q}>
  %1 = tessel.conv2d_backward_weight %x, %dy {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<4x3x32x32xf32>, tensor<4x16x16x16xf32>) -> tensor<16x3x3x3xf32>
  // Grouped, every channel dim is a replicated factor of its own.
  // CHECK: tessel.conv2d_backward_data {{.*}}#tessel.rule<([i, j, n, p], [k, l, r, s]) -> ([i, m, o, q]) {i=4, j=16, k=16, l=1, m=16, n=30, o=32, p=30, q=32, r=3, s=3} need_replication={j, k, l, m, n, o, p, q, r, s}>
  %2 = tessel.conv2d_backward_data %gy, %gw {group = 16 : i64} : (tensor<4x16x30x30xf32>, tensor<16x1x3x3xf32>) -> tensor<4x16x32x32xf32>
  // CHECK: tessel.conv2d_backward_weight {{.*}}#tessel.rule<([i, k, m, n], [i, j, o, p]) -> ([j, l, q, r]) {i=4, j=16, k=16, l=1, m=32, n=32, o=30, p=30, q=3, r=3} reduction={i} need_replication={j, k, l, m, n, o, p, q, r}>
  %3 = tessel.conv2d_backward_weight %gx, %gy {group = 16 : i64} : (tensor<4x16x32x32xf32>, tensor<4x16x30x30xf32>) -> tensor<16x1x3x3xf32>
  // Training batch norm: the channels pass, the rest needs the whole batch.
  // CHECK: tessel.batch_norm_train {{.*}}#tessel.rule<([i, j, k, l], [j], [j], [j], [j]) -> ([i, j, k, l]) {i=4, j=3, k=8, l=8} need_replication={i, k, l}>
  %4 = tessel.batch_norm_train %bx, %c, %c, %c, %c : (tensor<4x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3x8x8xf32>
  return
}

// CHECK-LABEL: func.func @norm_backward
func.func @norm_backward(%x: tensor<4x3x8x8xf32>, %c: tensor<3xf32>) {
  // The channels pass; the other dims are reduced: sharded, both sums are
  // partial (SyncBN's all_reduce in the backward).
  // CHECK: tessel.batch_norm_grad_sums {{.*}}#tessel.rule<([i, j, k, l], [i, j, k, l], [j]) -> ([j], [j]) {i=4, j=3, k=8, l=8} reduction={i, k, l}>
  %0:2 = tessel.batch_norm_grad_sums %x, %x, %c : (tensor<4x3x8x8xf32>, tensor<4x3x8x8xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  // CHECK: tessel.batch_norm_grad_input {{.*}}#tessel.rule<([i, j, k, l], [i, j, k, l], [j], [j], [j], [j]) -> ([i, j, k, l]) {i=4, j=3, k=8, l=8}>
  %1 = tessel.batch_norm_grad_input %x, %x, %c, %c, %c, %c : (tensor<4x3x8x8xf32>, tensor<4x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3x8x8xf32>
  // Likewise the forward's variance, a partial mean.
  // CHECK: tessel.batch_norm_variance {{.*}}#tessel.rule<([i, j, k, l], [j]) -> ([j]) {i=4, j=3, k=8, l=8} reduction={i, k, l}>
  %3 = tessel.batch_norm_variance %x, %c : (tensor<4x3x8x8xf32>, tensor<3xf32>) -> tensor<3xf32>
  // CHECK: tessel.relu_grad {{.*}}#tessel.rule<([i, j, k, l], [i, j, k, l]) -> ([i, j, k, l]) {i=4, j=3, k=8, l=8}>
  %2 = tessel.relu_grad %x, %x : (tensor<4x3x8x8xf32>, tensor<4x3x8x8xf32>) -> tensor<4x3x8x8xf32>
  return
}

// CHECK-LABEL: func.func @exporter_ops
func.func @exporter_ops(%i: tensor<4x5xi64>, %j: tensor<5xi64>, %x: tensor<4x5xf32>,
                        %d: tensor<3x5xf32>, %idx: tensor<3x4xi64>,
                        %e: tensor<4x3x2xf32>, %small: tensor<6x2x2xi32>) {
  // Both remainders are elementwise.
  // CHECK: tessel.mod {{.*}}#tessel.rule<([i, j], [j]) -> ([i, j]) {i=4, j=5}>
  %0 = tessel.mod %i, %j : (tensor<4x5xi64>, tensor<5xi64>) -> tensor<4x5xi64>
  // CHECK: tessel.fmod {{.*}}#tessel.rule<([i, j], [i, j]) -> ([i, j]) {i=4, j=5}>
  %1 = tessel.fmod %x, %x : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  // The scanned dim needs all of it; the others pass.
  // CHECK: tessel.cumsum {{.*}}#tessel.rule<([i, j]) -> ([i, j]) {i=4, j=5} need_replication={j}>
  %2 = tessel.cumsum %x axis = 1 {exclusive} : tensor<4x5xf32>
  // Rows pair up (same size); along the axis the indices may pick any
  // column of data (replicated), while the indices' and the result's
  // columns correspond.
  // CHECK: tessel.gather_elements {{.*}}#tessel.rule<([i, j], [i, k]) -> ([i, k]) {i=3, j=5, k=4} need_replication={j}>
  %3 = tessel.gather_elements %d[%idx] axis = 1 : (tensor<3x5xf32>, tensor<3x4xi64>) -> tensor<3x4xf32>
  // Indices shorter than data in dim 1: both replicated there (an index's
  // position is a global one); dim 2 has one size and pairs up.
  // CHECK: tessel.gather_elements {{.*}}#tessel.rule<([i, k, m], [j, l, m]) -> ([j, l, m]) {i=4, j=6, k=3, l=2, m=2} need_replication={i, k, l}>
  %4 = tessel.gather_elements %e[%small] axis = 0 : (tensor<4x3x2xf32>, tensor<6x2x2xi32>) -> tensor<6x2x2xf32>
  return
}
