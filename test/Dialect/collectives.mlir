// Round trip of the collective and point-to-point ops.
// RUN: tessel-opt %s | tessel-opt | FileCheck %s
// RUN: tessel-opt %s --mlir-print-op-generic | tessel-opt | FileCheck %s

tessel.mesh @mesh ["dp"=2, "tp"=4, "pp"=2]

// CHECK-LABEL: func.func @collectives
func.func @collectives(%x: tensor<8x192xf32>, %y: tensor<8x768xf32>) {
  // CHECK: tessel.all_reduce sum %{{.*}} on @mesh axes = ["tp"] : tensor<8x192xf32>
  %0 = tessel.all_reduce sum %x on @mesh axes = ["tp"] : tensor<8x192xf32>
  // CHECK: tessel.all_reduce max %{{.*}} on @mesh axes = ["dp", "tp"] : tensor<8x192xf32>
  %1 = tessel.all_reduce max %x on @mesh axes = ["dp", "tp"] : tensor<8x192xf32>
  // CHECK: tessel.all_gather %{{.*}} on @mesh axes = ["tp"] dim = 1 : (tensor<8x192xf32>) -> tensor<8x768xf32>
  %2 = tessel.all_gather %x on @mesh axes = ["tp"] dim = 1 : (tensor<8x192xf32>) -> tensor<8x768xf32>
  // CHECK: tessel.reduce_scatter sum %{{.*}} on @mesh axes = ["tp"] dim = 0 : (tensor<8x768xf32>) -> tensor<2x768xf32>
  %3 = tessel.reduce_scatter sum %y on @mesh axes = ["tp"] dim = 0 : (tensor<8x768xf32>) -> tensor<2x768xf32>
  // CHECK: tessel.reduce_scatter mean %{{.*}} on @mesh axes = ["dp", "tp"] dim = 1 : (tensor<8x768xf32>) -> tensor<8x96xf32>
  %4 = tessel.reduce_scatter mean %y on @mesh axes = ["dp", "tp"] dim = 1 : (tensor<8x768xf32>) -> tensor<8x96xf32>
  // CHECK: tessel.all_to_all %{{.*}} on @mesh axes = ["tp"] split_dim = 1 concat_dim = 0 : (tensor<8x192xf32>) -> tensor<32x48xf32>
  %5 = tessel.all_to_all %x on @mesh axes = ["tp"] split_dim = 1 concat_dim = 0 : (tensor<8x192xf32>) -> tensor<32x48xf32>
  // CHECK: tessel.collective_permute %{{.*}} on @mesh axes = ["pp"] pairs = [0, 1, 1, 0] : tensor<8x192xf32>
  %6 = tessel.collective_permute %x on @mesh axes = ["pp"] pairs = [0, 1, 1, 0] : tensor<8x192xf32>
  // CHECK: tessel.broadcast %{{.*}} on @mesh axes = ["dp"] root = 1 : tensor<8x192xf32>
  %7 = tessel.broadcast %x on @mesh axes = ["dp"] root = 1 : tensor<8x192xf32>
  // CHECK: tessel.send %{{.*}} on @mesh axes = ["pp"] target = 1 tag = 7 : tensor<8x192xf32>
  tessel.send %x on @mesh axes = ["pp"] target = 1 tag = 7 : tensor<8x192xf32>
  // CHECK: tessel.recv on @mesh axes = ["pp"] source = 0 tag = 7 : tensor<8x192xf32>
  %8 = tessel.recv on @mesh axes = ["pp"] source = 0 tag = 7 : tensor<8x192xf32>
  return
}
