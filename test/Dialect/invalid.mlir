// Every verifier message of the tessel compute ops, named after the
// constraint (C1, C2, ...) of the op's description that it enforces.
// RUN: tessel-opt %s -split-input-file -verify-diagnostics

// mesh_c1
// expected-error@+1 {{'tessel.mesh' op axis "tp" has size 0; sizes must be positive}}
tessel.mesh @mesh ["dp"=2, "tp"=0]

// -----

// mesh_c2
// expected-error@+1 {{'tessel.mesh' op axis "tp" is declared twice}}
tessel.mesh @mesh ["tp"=2, "tp"=4]

// -----

// mesh_c2
// expected-error@+1 {{'tessel.mesh' op has an axis with an empty name}}
tessel.mesh @mesh [""=2]

// -----

// expected-error@+1 {{'tessel.mesh' op has 2 axis names but 1 sizes}}
"tessel.mesh"() <{sym_name = "mesh", axis_names = ["a", "b"], axis_sizes = array<i64: 2>}> : () -> ()

// -----

func.func @mesh_parent() {
  // expected-error@+1 {{'tessel.mesh' op expects parent op 'builtin.module'}}
  tessel.mesh @mesh ["tp"=2]
  return
}

// -----

func.func @weight_c1() {
  // expected-error@+1 {{'tessel.weight' op needs a non-empty name}}
  %0 = tessel.weight "" : tensor<4xf32>
  return
}

// -----

func.func @constant_c1() {
  // expected-error@+1 {{'tessel.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "tessel.constant"() <{value = dense<0.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  return
}

// -----

func.func @unary_c1(%x: tensor<4xf32>) {
  // expected-error@+1 {{'tessel.exp' op requires the same type for all operands and results}}
  %0 = "tessel.exp"(%x) : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @unary_float_only(%x: tensor<4xi64>) {
  // expected-error@+1 {{'tessel.exp' op operand #0 must be ranked tensor of floating-point values, but got 'tensor<4xi64>'}}
  %0 = tessel.exp %x : tensor<4xi64>
  return
}

// -----

func.func @cast_c1(%x: tensor<4xi64>) {
  // expected-error@+1 {{'tessel.cast' op operand shape [4] differs from result shape [5]}}
  %0 = tessel.cast %x : tensor<4xi64> -> tensor<5xf32>
  return
}

// -----

func.func @binary_c1(%a: tensor<4xf32>, %b: tensor<4xi64>) {
  // expected-error@+2 {{operands have different element types: 'f32' and 'i64'}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.add %a, %b : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @binary_c2(%a: tensor<4x3xf32>, %b: tensor<5xf32>) {
  // expected-error@+2 {{operand shapes [4, 3] and [5] do not broadcast}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.mul %a, %b : (tensor<4x3xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  return
}

// -----

func.func @binary_c2_result(%a: tensor<4x1xf32>, %b: tensor<5xf32>) {
  // expected-error@+2 {{'tessel.sub' op inferred type(s) 'tensor<4x5xf32>' are incompatible with return type(s) of operation 'tensor<4x1xf32>'}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.sub %a, %b : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x1xf32>
  return
}

// -----

func.func @compare_c2(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{'tessel.compare' op result #0 must be ranked tensor of 1-bit signless integer values, but got 'tensor<4xi8>'}}
  %0 = "tessel.compare"(%a, %b) <{predicate = 0 : i32}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi8>
  return
}

// -----

func.func @where_c1(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error@+2 {{on_true and on_false have different element types: 'f32' and 'f16'}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.where %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @where_c2(%c: tensor<3xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error@+2 {{operand shapes [3] and [4] and [4] do not broadcast}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.where %c, %a, %b : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @matmul_c1(%a: tensor<f32>, %b: tensor<4xf32>) {
  // expected-error@+2 {{matmul operands must have rank at least 1}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.matmul %a, %b : (tensor<f32>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @matmul_c2(%a: tensor<8x16xf32>, %b: tensor<15x4xf32>) {
  // expected-error@+2 {{contracting dims differ: lhs [8, 16] has 16, rhs [15, 4] has 15}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.matmul %a, %b : (tensor<8x16xf32>, tensor<15x4xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @matmul_c3(%a: tensor<2x8x16xf32>, %b: tensor<3x16x4xf32>) {
  // expected-error@+2 {{batch dims of [2, 8, 16] and [3, 16, 4] do not broadcast}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.matmul %a, %b : (tensor<2x8x16xf32>, tensor<3x16x4xf32>) -> tensor<2x8x4xf32>
  return
}

// -----

func.func @gemm_c1(%a: tensor<2x8x16xf32>, %b: tensor<16x4xf32>) {
  // expected-error@+2 {{gemm operands a and b must have rank 2, got 3 and 2}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.gemm %a, %b : (tensor<2x8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @gemm_c2(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) {
  // expected-error@+2 {{contracting dims differ: a gives 16, b gives 4}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.gemm %a, %b {trans_b} : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @gemm_c3(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %c: tensor<5xf32>) {
  // expected-error@+2 {{c of shape [5] does not broadcast to [8, 4]}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.gemm %a, %b, %c : (tensor<8x16xf32>, tensor<16x4xf32>, tensor<5xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @reduce_c1_range(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{reduced dim 2 is out of range [0, 2)}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.reduce_sum %x dims = [2] : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @reduce_c1_twice(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{reduced dim 1 appears twice}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.reduce_max %x dims = [1, 1] : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @softmax_c1(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'tessel.softmax' op axis 2 is out of range [0, 2)}}
  %0 = tessel.softmax %x axis = 2 : tensor<4x8xf32>
  return
}

// -----

func.func @log_softmax_c1(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'tessel.log_softmax' op axis -1 is out of range [0, 2)}}
  %0 = tessel.log_softmax %x axis = -1 : tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_c1(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error@+1 {{'tessel.layer_norm' op axis 2 is out of range [0, 2)}}
  %0 = tessel.layer_norm %x, %g axis = 2 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_c2_scale(%x: tensor<4x8xf32>, %g: tensor<4xf32>) {
  // expected-error@+1 {{'tessel.layer_norm' op scale has shape [4] but the normalised dims are [8]}}
  %0 = tessel.layer_norm %x, %g axis = 1 : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_c2_bias(%x: tensor<4x8xf32>, %g: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error@+1 {{'tessel.layer_norm' op bias has shape [8] but the normalised dims are [4, 8]}}
  %0 = tessel.layer_norm %x, %g, %b axis = 0 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @rms_norm_c1(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error@+1 {{'tessel.rms_norm' op axis 3 is out of range [0, 2)}}
  %0 = tessel.rms_norm %x, %g axis = 3 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @rms_norm_c2(%x: tensor<4x8xf32>, %g: tensor<7xf32>) {
  // expected-error@+1 {{'tessel.rms_norm' op scale has shape [7] but the normalised dims are [8]}}
  %0 = tessel.rms_norm %x, %g axis = 1 : (tensor<4x8xf32>, tensor<7xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @batch_norm_c1(%x: tensor<4xf32>, %c: tensor<4xf32>) {
  // expected-error@+1 {{'tessel.batch_norm' op input must have rank at least 2, got 1}}
  %0 = tessel.batch_norm %x, %c, %c, %c, %c : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @batch_norm_c2(%x: tensor<2x4x3x3xf32>, %c: tensor<4xf32>, %v: tensor<3xf32>) {
  // expected-error@+1 {{'tessel.batch_norm' op variance has shape [3] but the input has 4 channels}}
  %0 = tessel.batch_norm %x, %c, %c, %c, %v : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<2x4x3x3xf32>
  return
}

// -----

func.func @gather_c1(%d: tensor<10x4xf32>, %i: tensor<3xi64>) {
  // expected-error@+2 {{gather axis 2 is out of range [0, 2)}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.gather %d[%i] axis = 2 : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  return
}

// -----

func.func @reshape_c1_count(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'tessel.reshape' op cannot reshape [4, 8] (32 elements) to [30] (30 elements)}}
  %0 = tessel.reshape %x : (tensor<4x8xf32>) -> tensor<30xf32>
  return
}

// -----

func.func @reshape_c1_type(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'tessel.reshape' op changes the element type from 'f32' to 'f16'}}
  %0 = tessel.reshape %x : (tensor<4x8xf32>) -> tensor<32xf16>
  return
}

// -----

func.func @transpose_c1(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{perm [0, 0] is not a permutation of [0, 2)}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.transpose %x perm = [0, 0] : (tensor<4x8xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @slice_c1(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{slice needs one start:limit:stride per dim (rank 2)}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.slice %x [0:4:1] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @slice_c2(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{slice of dim 1 (size 8) needs 0 <= start <= limit <= size and stride >= 1, got 0:9:1}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.slice %x [0:4:1, 0:9:1] : (tensor<4x8xf32>) -> tensor<4x9xf32>
  return
}

// -----

func.func @concat_c1() {
  // expected-error@+2 {{concat needs at least one operand}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = "tessel.concat"() <{dim = 0 : i64}> : () -> tensor<4xf32>
  return
}

// -----

func.func @concat_c2(%a: tensor<4xf32>) {
  // expected-error@+2 {{concat dim 1 is out of range [0, 1)}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.concat %a, %a dim = 1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @concat_c1_rank(%a: tensor<4xf32>, %b: tensor<4x1xf32>) {
  // expected-error@+2 {{concat operand 1 differs in rank or element type from operand 0}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.concat %a, %b dim = 0 : (tensor<4xf32>, tensor<4x1xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @concat_c3(%a: tensor<4x2xf32>, %b: tensor<4x3xf32>) {
  // expected-error@+2 {{concat operand 1 has size 3 in dim 1, operand 0 has 2}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.concat %a, %b dim = 0 : (tensor<4x2xf32>, tensor<4x3xf32>) -> tensor<8x2xf32>
  return
}

// -----

// Sizes from an untrusted model: their sum is refused past 2^62, not wrapped.
func.func @concat_size_overflow(%a: tensor<4611686018427387904xf32>, %b: tensor<4611686018427387904xf32>) {
  // expected-error@+2 {{concat operands' sizes in dim 0 add up past 2^62}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.concat %a, %b dim = 0 : (tensor<4611686018427387904xf32>, tensor<4611686018427387904xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @split_c1(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{split dim 2 is out of range [0, 2)}}
  // expected-error@+1 {{failed to infer returned types}}
  %0:2 = tessel.split %x dim = 2 sizes = [4, 4] : (tensor<4x8xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
  return
}

// -----

func.func @split_c2_positive(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{split sizes must be positive, got [8, 0]}}
  // expected-error@+1 {{failed to infer returned types}}
  %0:2 = tessel.split %x dim = 1 sizes = [8, 0] : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x0xf32>)
  return
}

// -----

func.func @split_c2_sum(%x: tensor<4x8xf32>) {
  // expected-error@+2 {{split sizes [4, 3] sum to 7, dim 1 has size 8}}
  // expected-error@+1 {{failed to infer returned types}}
  %0:2 = tessel.split %x dim = 1 sizes = [4, 3] : (tensor<4x8xf32>) -> (tensor<4x4xf32>, tensor<4x3xf32>)
  return
}

// -----

func.func @expand_c1(%x: tensor<3x8xf32>) {
  // expected-error@+1 {{'tessel.expand' op cannot broadcast 'tensor<3x8xf32>' to 'tensor<4x8xf32>'}}
  %0 = tessel.expand %x : (tensor<3x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @conv2d_c1(%x: tensor<3x32x32xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+2 {{conv2d input and weight must have rank 4, got 3 and 4}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.conv2d %x, %w : (tensor<3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x30x30xf32>
  return
}

// -----

func.func @conv2d_c1_bias(%x: tensor<1x3x32x32xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<8xf32>) {
  // expected-error@+2 {{conv2d bias must be [16], got [8]}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.conv2d %x, %w, %b : (tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<8xf32>) -> tensor<1x16x30x30xf32>
  return
}

// -----

func.func @conv2d_c2(%x: tensor<1x3x32x32xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+2 {{strides must have 2 positive entries, got [0, 1]}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.conv2d %x, %w {strides = array<i64: 0, 1>} : (tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x30x30xf32>
  return
}

// -----

func.func @conv2d_c2_pads(%x: tensor<1x3x32x32xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+2 {{pads must have 4 non-negative entries [top, left, bottom, right], got [1, 1]}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.conv2d %x, %w {pads = array<i64: 1, 1>} : (tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x32x32xf32>
  return
}

// -----

func.func @conv2d_c3(%x: tensor<1x4x32x32xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+2 {{conv2d with group 1 over 4 input channels needs weight dim 1 = 4 and 16 output channels divisible by the group, got weight [16, 3, 3, 3]}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.conv2d %x, %w : (tensor<1x4x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x30x30xf32>
  return
}

// -----

func.func @conv2d_c4(%x: tensor<1x3x2x2xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+2 {{conv2d output spatial size would be 0x0}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.conv2d %x, %w : (tensor<1x3x2x2xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x1x1xf32>
  return
}

// -----

func.func @pool_c1(%x: tensor<3x32x32xf32>) {
  // expected-error@+2 {{pooling input must have rank 4, got 3}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.max_pool %x {kernel = array<i64: 2, 2>} : (tensor<3x32x32xf32>) -> tensor<3x16x16xf32>
  return
}

// -----

func.func @pool_c2(%x: tensor<1x3x32x32xf32>) {
  // expected-error@+2 {{kernel must have 2 positive entries, got [2]}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.avg_pool %x {kernel = array<i64: 2>} : (tensor<1x3x32x32xf32>) -> tensor<1x3x16x16xf32>
  return
}

// -----

func.func @pool_c3(%x: tensor<1x3x2x2xf32>) {
  // expected-error@+2 {{pooling output spatial size would be 0x0}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.max_pool %x {kernel = array<i64: 3, 3>} : (tensor<1x3x2x2xf32>) -> tensor<1x3x1x1xf32>
  return
}

// -----

func.func @global_avg_pool_c1(%x: tensor<3x32xf32>) {
  // expected-error@+2 {{global_avg_pool input must have rank at least 3, got 2}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.global_avg_pool %x : (tensor<3x32xf32>) -> tensor<3x32xf32>
  return
}

// -----

func.func @cumsum_c1(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'tessel.cumsum' op axis 2 is out of range [0, 2)}}
  %0 = tessel.cumsum %x axis = 2 : tensor<4x8xf32>
  return
}

// -----

func.func @gather_elements_c1(%d: tensor<3x5xf32>, %i: tensor<3x2xi64>) {
  // expected-error@+2 {{gather_elements axis 2 is out of range [0, 2)}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.gather_elements %d[%i] axis = 2 : (tensor<3x5xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  return
}

// -----

func.func @gather_elements_c2_rank(%d: tensor<3x5xf32>, %i: tensor<6xi64>) {
  // expected-error@+2 {{gather_elements indices [6] and data [3, 5] have different ranks}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.gather_elements %d[%i] axis = 1 : (tensor<3x5xf32>, tensor<6xi64>) -> tensor<6xf32>
  return
}

// -----

func.func @gather_elements_c2_size(%d: tensor<3x5xf32>, %i: tensor<4x2xi64>) {
  // expected-error@+2 {{gather_elements indices [4, 2] are larger than data [3, 5] in dim 0}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = tessel.gather_elements %d[%i] axis = 1 : (tensor<3x5xf32>, tensor<4x2xi64>) -> tensor<4x2xf32>
  return
}
