// Round trip of every tessel compute op: parse, print, parse again, and the
// generic form.
// RUN: tessel-opt %s | tessel-opt | FileCheck %s
// RUN: tessel-opt %s --mlir-print-op-generic | tessel-opt | FileCheck %s

tessel.mesh @mesh ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @params
func.func @params() -> (tensor<30x32xf32>, tensor<2xf32>) {
  // CHECK: tessel.weight "transformer.h.0.attn.c_attn.weight" : tensor<30x32xf32>
  %w = tessel.weight "transformer.h.0.attn.c_attn.weight" : tensor<30x32xf32>
  // CHECK: tessel.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  %c = tessel.constant dense<[1.0, 2.0]> : tensor<2xf32>
  return %w, %c : tensor<30x32xf32>, tensor<2xf32>
}

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<4x8xf32>, %b: tensor<4xi1>) {
  // CHECK: tessel.neg %{{.*}} : tensor<4x8xf32>
  %0 = tessel.neg %x : tensor<4x8xf32>
  // CHECK: tessel.exp
  %1 = tessel.exp %x : tensor<4x8xf32>
  // CHECK: tessel.log
  %2 = tessel.log %x : tensor<4x8xf32>
  // CHECK: tessel.sqrt
  %3 = tessel.sqrt %x : tensor<4x8xf32>
  // CHECK: tessel.rsqrt
  %4 = tessel.rsqrt %x : tensor<4x8xf32>
  // CHECK: tessel.reciprocal
  %5 = tessel.reciprocal %x : tensor<4x8xf32>
  // CHECK: tessel.abs
  %6 = tessel.abs %x : tensor<4x8xf32>
  // CHECK: tessel.tanh
  %7 = tessel.tanh %x : tensor<4x8xf32>
  // CHECK: tessel.erf
  %8 = tessel.erf %x : tensor<4x8xf32>
  // CHECK: tessel.sigmoid
  %9 = tessel.sigmoid %x : tensor<4x8xf32>
  // CHECK: tessel.relu
  %10 = tessel.relu %x : tensor<4x8xf32>
  // CHECK: tessel.gelu %{{.*}} : tensor<4x8xf32>
  %11 = tessel.gelu %x : tensor<4x8xf32>
  // CHECK: tessel.gelu %{{.*}} {tanh_approximation} : tensor<4x8xf32>
  %12 = tessel.gelu %x {tanh_approximation} : tensor<4x8xf32>
  // CHECK: tessel.not %{{.*}} : tensor<4xi1>
  %13 = tessel.not %b : tensor<4xi1>
  // CHECK: tessel.cast %{{.*}} : tensor<4xi1> -> tensor<4xf32>
  %14 = tessel.cast %b : tensor<4xi1> -> tensor<4xf32>
  return
}

// CHECK-LABEL: func.func @binary
func.func @binary(%a: tensor<4x1xf32>, %b: tensor<5xf32>, %i: tensor<4x5xi64>) {
  // CHECK: tessel.add %{{.*}}, %{{.*}} : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  %0 = tessel.add %a, %b : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  // CHECK: tessel.sub
  %1 = tessel.sub %a, %b : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  // CHECK: tessel.mul
  %2 = tessel.mul %a, %b : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  // CHECK: tessel.div
  %3 = tessel.div %a, %b : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  // CHECK: tessel.pow
  %4 = tessel.pow %a, %b : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  // CHECK: tessel.max
  %5 = tessel.max %a, %b : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  // CHECK: tessel.min
  %6 = tessel.min %a, %b : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  // CHECK: tessel.add %{{.*}}, %{{.*}} : (tensor<4x5xi64>, tensor<4x5xi64>) -> tensor<4x5xi64>
  %7 = tessel.add %i, %i : (tensor<4x5xi64>, tensor<4x5xi64>) -> tensor<4x5xi64>
  // CHECK: tessel.compare ge, %{{.*}}, %{{.*}} : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xi1>
  %8 = tessel.compare ge, %a, %b : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xi1>
  // CHECK: tessel.where %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x5xi1>, tensor<4x1xf32>, tensor<f32>) -> tensor<4x5xf32>
  %s = tessel.constant dense<0.0> : tensor<f32>
  %9 = tessel.where %8, %a, %s : (tensor<4x5xi1>, tensor<4x1xf32>, tensor<f32>) -> tensor<4x5xf32>
  return
}

// CHECK-LABEL: func.func @contractions
func.func @contractions(%q: tensor<2x4x32x16xf32>, %k: tensor<2x4x16x32xf32>,
                        %v: tensor<16xf32>, %x: tensor<8x64xf32>,
                        %w: tensor<128x64xf32>, %b: tensor<128xf32>) {
  // CHECK: tessel.matmul %{{.*}}, %{{.*}} : (tensor<2x4x32x16xf32>, tensor<2x4x16x32xf32>) -> tensor<2x4x32x32xf32>
  %0 = tessel.matmul %q, %k : (tensor<2x4x32x16xf32>, tensor<2x4x16x32xf32>) -> tensor<2x4x32x32xf32>
  // CHECK: tessel.matmul %{{.*}}, %{{.*}} : (tensor<2x4x32x16xf32>, tensor<16xf32>) -> tensor<2x4x32xf32>
  %1 = tessel.matmul %q, %v : (tensor<2x4x32x16xf32>, tensor<16xf32>) -> tensor<2x4x32xf32>
  // CHECK: tessel.gemm %{{.*}}, %{{.*}}, %{{.*}} {alpha = 5.000000e-01 : f32, trans_b} : (tensor<8x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<8x128xf32>
  %2 = tessel.gemm %x, %w, %b {trans_b, alpha = 0.5 : f32} : (tensor<8x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<8x128xf32>
  // CHECK: tessel.gemm %{{.*}}, %{{.*}} {trans_a} : (tensor<64x8xf32>, tensor<64x128xf32>) -> tensor<8x128xf32>
  %xt = tessel.transpose %x perm = [1, 0] : (tensor<8x64xf32>) -> tensor<64x8xf32>
  %wt = tessel.transpose %w perm = [1, 0] : (tensor<128x64xf32>) -> tensor<64x128xf32>
  %3 = tessel.gemm %xt, %wt {trans_a} : (tensor<64x8xf32>, tensor<64x128xf32>) -> tensor<8x128xf32>
  return
}

// CHECK-LABEL: func.func @reductions_and_norms
func.func @reductions_and_norms(%x: tensor<2x32x64xf32>, %g: tensor<64xf32>,
                                %img: tensor<4x16x8x8xf32>, %c: tensor<16xf32>) {
  // CHECK: tessel.reduce_sum %{{.*}} dims = [1] keep_dims : (tensor<2x32x64xf32>) -> tensor<2x1x64xf32>
  %0 = tessel.reduce_sum %x dims = [1] keep_dims : (tensor<2x32x64xf32>) -> tensor<2x1x64xf32>
  // CHECK: tessel.reduce_mean %{{.*}} dims = [2] : (tensor<2x32x64xf32>) -> tensor<2x32xf32>
  %1 = tessel.reduce_mean %x dims = [2] : (tensor<2x32x64xf32>) -> tensor<2x32xf32>
  // CHECK: tessel.reduce_max %{{.*}} dims = [0, 2] : (tensor<2x32x64xf32>) -> tensor<32xf32>
  %2 = tessel.reduce_max %x dims = [0, 2] : (tensor<2x32x64xf32>) -> tensor<32xf32>
  // CHECK: tessel.softmax %{{.*}} axis = 2 : tensor<2x32x64xf32>
  %3 = tessel.softmax %x axis = 2 : tensor<2x32x64xf32>
  // CHECK: tessel.log_softmax %{{.*}} axis = 1 : tensor<2x32x64xf32>
  %4 = tessel.log_softmax %x axis = 1 : tensor<2x32x64xf32>
  // CHECK: tessel.layer_norm %{{.*}}, %{{.*}}, %{{.*}} axis = 2 : (tensor<2x32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
  %5 = tessel.layer_norm %x, %g, %g axis = 2 : (tensor<2x32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
  // CHECK: tessel.layer_norm %{{.*}}, %{{.*}} axis = 2 {epsilon = 2.500000e-01 : f32} : (tensor<2x32x64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
  %6 = tessel.layer_norm %x, %g axis = 2 {epsilon = 0.25 : f32} : (tensor<2x32x64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
  // CHECK: tessel.rms_norm %{{.*}}, %{{.*}} axis = 2 : (tensor<2x32x64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
  %7 = tessel.rms_norm %x, %g axis = 2 {epsilon = 1.0e-6 : f32} : (tensor<2x32x64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
  // CHECK: tessel.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.250000e-01 : f32} : (tensor<4x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x16x8x8xf32>
  %8 = tessel.batch_norm %img, %c, %c, %c, %c {epsilon = 0.125 : f32} : (tensor<4x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x16x8x8xf32>
  return
}

// CHECK-LABEL: func.func @data_movement
func.func @data_movement(%wte: tensor<100x64xf32>, %ids: tensor<2x32xi64>,
                         %x: tensor<2x32x192xf32>, %y: tensor<1x32xf32>) {
  // CHECK: tessel.gather %{{.*}}[%{{.*}}] axis = 0 : (tensor<100x64xf32>, tensor<2x32xi64>) -> tensor<2x32x64xf32>
  %0 = tessel.gather %wte[%ids] axis = 0 : (tensor<100x64xf32>, tensor<2x32xi64>) -> tensor<2x32x64xf32>
  // CHECK: tessel.reshape %{{.*}} : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
  %1 = tessel.reshape %0 : (tensor<2x32x64xf32>) -> tensor<2x32x4x16xf32>
  // CHECK: tessel.transpose %{{.*}} perm = [0, 2, 1, 3] : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
  %2 = tessel.transpose %1 perm = [0, 2, 1, 3] : (tensor<2x32x4x16xf32>) -> tensor<2x4x32x16xf32>
  // CHECK: tessel.slice %{{.*}} [0:2:1, 1:32:2, 0:64:1] : (tensor<2x32x64xf32>) -> tensor<2x16x64xf32>
  %3 = tessel.slice %0 [0:2:1, 1:32:2, 0:64:1] : (tensor<2x32x64xf32>) -> tensor<2x16x64xf32>
  // CHECK: tessel.concat %{{.*}}, %{{.*}} dim = 1 : (tensor<2x32x64xf32>, tensor<2x16x64xf32>) -> tensor<2x48x64xf32>
  %4 = tessel.concat %0, %3 dim = 1 : (tensor<2x32x64xf32>, tensor<2x16x64xf32>) -> tensor<2x48x64xf32>
  // CHECK: tessel.split %{{.*}} dim = 2 sizes = [64, 64, 64] : (tensor<2x32x192xf32>) -> (tensor<2x32x64xf32>, tensor<2x32x64xf32>, tensor<2x32x64xf32>)
  %5:3 = tessel.split %x dim = 2 sizes = [64, 64, 64] : (tensor<2x32x192xf32>) -> (tensor<2x32x64xf32>, tensor<2x32x64xf32>, tensor<2x32x64xf32>)
  // CHECK: tessel.expand %{{.*}} : (tensor<1x32xf32>) -> tensor<4x32xf32>
  %6 = tessel.expand %y : (tensor<1x32xf32>) -> tensor<4x32xf32>
  return
}

// CHECK-LABEL: func.func @conv_and_pool
func.func @conv_and_pool(%x: tensor<4x3x32x32xf32>, %w: tensor<16x3x3x3xf32>,
                         %b: tensor<16xf32>, %dw: tensor<16x1x3x3xf32>) {
  // CHECK: tessel.conv2d %{{.*}}, %{{.*}}, %{{.*}} {pads = array<i64: 1, 1, 1, 1>} : (tensor<4x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<4x16x32x32xf32>
  %0 = tessel.conv2d %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<4x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<4x16x32x32xf32>
  // CHECK: tessel.conv2d %{{.*}}, %{{.*}} {group = 16 : i64, strides = array<i64: 2, 2>} : (tensor<4x16x32x32xf32>, tensor<16x1x3x3xf32>) -> tensor<4x16x15x15xf32>
  %1 = tessel.conv2d %0, %dw {group = 16 : i64, strides = array<i64: 2, 2>} : (tensor<4x16x32x32xf32>, tensor<16x1x3x3xf32>) -> tensor<4x16x15x15xf32>
  // CHECK: tessel.max_pool %{{.*}} {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<4x16x32x32xf32>) -> tensor<4x16x16x16xf32>
  %2 = tessel.max_pool %0 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<4x16x32x32xf32>) -> tensor<4x16x16x16xf32>
  // CHECK: tessel.avg_pool %{{.*}} {ceil_mode, count_include_pad, kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<4x16x15x15xf32>) -> tensor<4x16x8x8xf32>
  %3 = tessel.avg_pool %1 {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad, ceil_mode} : (tensor<4x16x15x15xf32>) -> tensor<4x16x8x8xf32>
  // CHECK: tessel.global_avg_pool %{{.*}} : (tensor<4x16x16x16xf32>) -> tensor<4x16x1x1xf32>
  %4 = tessel.global_avg_pool %2 : (tensor<4x16x16x16xf32>) -> tensor<4x16x1x1xf32>
  return
}

// CHECK-LABEL: func.func @constraint
func.func @constraint(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // CHECK: tessel.shard_constraint %{{.*}} <@mesh, [{"dp"}, {"tp"}]> : tensor<8x32xf32>
  %0 = tessel.shard_constraint %x <@mesh, [{"dp"}, {"tp"}]> : tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// CHECK-LABEL: func.func @exporter_ops
func.func @exporter_ops(%i: tensor<4x5xi64>, %j: tensor<5xi64>, %x: tensor<4x5xf32>,
                        %idx: tensor<4x2xi32>) {
  // CHECK: tessel.mod %{{.*}}, %{{.*}} : (tensor<4x5xi64>, tensor<5xi64>) -> tensor<4x5xi64>
  %0 = tessel.mod %i, %j : (tensor<4x5xi64>, tensor<5xi64>) -> tensor<4x5xi64>
  // CHECK: tessel.fmod %{{.*}}, %{{.*}} : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  %1 = tessel.fmod %x, %x : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  // CHECK: tessel.cumsum %{{.*}} axis = 1 {exclusive, reverse} : tensor<4x5xi64>
  %2 = tessel.cumsum %i axis = 1 {exclusive, reverse} : tensor<4x5xi64>
  // CHECK: tessel.gather_elements %{{.*}}[%{{.*}}] axis = 1 : (tensor<4x5xf32>, tensor<4x2xi32>) -> tensor<4x2xf32>
  %3 = tessel.gather_elements %x[%idx] axis = 1 : (tensor<4x5xf32>, tensor<4x2xi32>) -> tensor<4x2xf32>
  return
}
