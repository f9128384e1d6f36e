// A fused projection whose bias is shared with another layer (PyTorch's
// exporter dedups identical initializers) still splits into its q, k, v
// pieces: a weight is a leaf, its other users keep it.
// RUN: tessel-opt %s --tessel-propagate --tessel-partition | FileCheck %s

tessel.mesh @mesh ["tp"=2]

// CHECK-LABEL: func.func @two_layers
// CHECK-NOT: tessel.split
// CHECK-NOT: tessel.all_gather
// CHECK-DAG: tessel.weight "c_attn.bias" {{.*}}tessel.source_slice = array<i64: 0, 0, 16>{{.*}} : tensor<8xf32>
// CHECK-DAG: tessel.weight "c_attn.bias" {{.*}}tessel.source_slice = array<i64: 0, 32, 48>{{.*}} : tensor<8xf32>
// CHECK: return
func.func @two_layers(%x: tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>) {
  %b = tessel.weight "c_attn.bias" {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}]>} : tensor<48xf32>
  %w1 = tessel.weight "h.0.c_attn.weight" {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>} : tensor<16x48xf32>
  %m1 = tessel.matmul %x, %w1 : (tensor<2x8x16xf32>, tensor<16x48xf32>) -> tensor<2x8x48xf32>
  %a1 = tessel.add %m1, %b : (tensor<2x8x48xf32>, tensor<48xf32>) -> tensor<2x8x48xf32>
  %q1, %k1, %v1 = tessel.split %a1 dim = 2 sizes = [16, 16, 16] : (tensor<2x8x48xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>)
  %s1 = tessel.add %q1, %v1 : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %w2 = tessel.weight "h.1.c_attn.weight" {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>} : tensor<16x48xf32>
  %m2 = tessel.matmul %x, %w2 : (tensor<2x8x16xf32>, tensor<16x48xf32>) -> tensor<2x8x48xf32>
  %a2 = tessel.add %m2, %b : (tensor<2x8x48xf32>, tensor<48xf32>) -> tensor<2x8x48xf32>
  %q2, %k2, %v2 = tessel.split %a2 dim = 2 sizes = [16, 16, 16] : (tensor<2x8x48xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>)
  %s2 = tessel.add %q2, %k2 : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %s1, %s2 : tensor<2x8x16xf32>, tensor<2x8x16xf32>
}
