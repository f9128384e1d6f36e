// Every verifier message of the collective and point-to-point ops.
// RUN: tessel-opt %s -split-input-file -verify-diagnostics

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @collective_c1(%x: tensor<8xf32>) {
  // expected-error@+1 {{'tessel.all_reduce' op refers to unknown mesh @other}}
  %0 = tessel.all_reduce sum %x on @other axes = ["tp"] : tensor<8xf32>
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @collective_c2_empty(%x: tensor<8xf32>) {
  // expected-error@+1 {{'tessel.broadcast' op needs at least one mesh axis}}
  %0 = tessel.broadcast %x on @mesh axes = [] root = 0 : tensor<8xf32>
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @collective_c2_unknown(%x: tensor<8xf32>) {
  // expected-error@+1 {{'tessel.all_reduce' op axis "pp" is not in mesh @mesh (it has dp, tp)}}
  %0 = tessel.all_reduce sum %x on @mesh axes = ["pp"] : tensor<8xf32>
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @collective_c2_twice(%x: tensor<8xf32>) {
  // expected-error@+1 {{'tessel.all_reduce' op axis "tp" appears twice}}
  %0 = tessel.all_reduce sum %x on @mesh axes = ["tp", "tp"] : tensor<8xf32>
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @all_reduce_c3(%x: tensor<8xf32>) {
  // expected-error@+1 {{'tessel.all_reduce' op requires the same type for all operands and results}}
  %0 = "tessel.all_reduce"(%x) <{kind = 0 : i32, mesh = @mesh, axes = ["tp"]}> : (tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @all_gather_c3_dim(%x: tensor<8xf32>) {
  // expected-error@+1 {{'tessel.all_gather' op dim 1 is out of range [0, 1)}}
  %0 = tessel.all_gather %x on @mesh axes = ["tp"] dim = 1 : (tensor<8xf32>) -> tensor<32xf32>
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @all_gather_c3_rank(%x: tensor<8xf32>) {
  // expected-error@+1 {{'tessel.all_gather' op operand 'tensor<8xf32>' and result 'tensor<8x4xf32>' differ in rank or element type}}
  %0 = tessel.all_gather %x on @mesh axes = ["tp"] dim = 0 : (tensor<8xf32>) -> tensor<8x4xf32>
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @all_gather_c4(%x: tensor<8x2xf32>) {
  // expected-error@+1 {{'tessel.all_gather' op result dim 1 must be 2 x 4 (group size) = 8, got 6}}
  %0 = tessel.all_gather %x on @mesh axes = ["tp"] dim = 1 : (tensor<8x2xf32>) -> tensor<8x6xf32>
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @all_gather_c4_other(%x: tensor<8x2xf32>) {
  // expected-error@+1 {{'tessel.all_gather' op dim 0 changes from 8 to 4}}
  %0 = tessel.all_gather %x on @mesh axes = ["tp"] dim = 1 : (tensor<8x2xf32>) -> tensor<4x8xf32>
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @reduce_scatter_c4_div(%x: tensor<6x2xf32>) {
  // expected-error@+1 {{'tessel.reduce_scatter' op operand dim 0 of size 6 is not divisible by the group size 4}}
  %0 = tessel.reduce_scatter sum %x on @mesh axes = ["tp"] dim = 0 : (tensor<6x2xf32>) -> tensor<1x2xf32>
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @reduce_scatter_c4(%x: tensor<8x2xf32>) {
  // expected-error@+1 {{'tessel.reduce_scatter' op result dim 0 must be 8 / 8 (group size) = 1, got 2}}
  %0 = tessel.reduce_scatter sum %x on @mesh axes = ["dp", "tp"] dim = 0 : (tensor<8x2xf32>) -> tensor<2x2xf32>
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @reduce_scatter_c3(%x: tensor<8x2xf32>) {
  // expected-error@+1 {{'tessel.reduce_scatter' op dim -1 is out of range [0, 2)}}
  %0 = tessel.reduce_scatter sum %x on @mesh axes = ["tp"] dim = -1 : (tensor<8x2xf32>) -> tensor<2x2xf32>
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @all_to_all_c3(%x: tensor<8x2xf32>) {
  // expected-error@+1 {{'tessel.all_to_all' op concat_dim 2 is out of range [0, 2)}}
  %0 = tessel.all_to_all %x on @mesh axes = ["tp"] split_dim = 0 concat_dim = 2 : (tensor<8x2xf32>) -> tensor<2x8xf32>
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @all_to_all_c4_div(%x: tensor<8x2xf32>) {
  // expected-error@+1 {{'tessel.all_to_all' op split_dim 1 of size 2 is not divisible by the group size 4}}
  %0 = tessel.all_to_all %x on @mesh axes = ["tp"] split_dim = 1 concat_dim = 0 : (tensor<8x2xf32>) -> tensor<32x1xf32>
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @all_to_all_c4(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{'tessel.all_to_all' op result shape must be [32, 1], got [16, 1]}}
  %0 = tessel.all_to_all %x on @mesh axes = ["tp"] split_dim = 1 concat_dim = 0 : (tensor<8x4xf32>) -> tensor<16x1xf32>
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @permute_c4_odd(%x: tensor<8xf32>) {
  // expected-error@+1 {{'tessel.collective_permute' op pairs must list (source, target) pairs, got 3 entries}}
  %0 = tessel.collective_permute %x on @mesh axes = ["tp"] pairs = [0, 1, 2] : tensor<8xf32>
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @permute_c4_range(%x: tensor<8xf32>) {
  // expected-error@+1 {{'tessel.collective_permute' op pair (0, 4) is out of range for group size 4}}
  %0 = tessel.collective_permute %x on @mesh axes = ["tp"] pairs = [0, 4] : tensor<8xf32>
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @permute_c4_source(%x: tensor<8xf32>) {
  // expected-error@+1 {{'tessel.collective_permute' op source 0 appears twice}}
  %0 = tessel.collective_permute %x on @mesh axes = ["tp"] pairs = [0, 1, 0, 2] : tensor<8xf32>
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @permute_c4_target(%x: tensor<8xf32>) {
  // expected-error@+1 {{'tessel.collective_permute' op target 1 appears twice}}
  %0 = tessel.collective_permute %x on @mesh axes = ["tp"] pairs = [0, 1, 2, 1] : tensor<8xf32>
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @broadcast_c4(%x: tensor<8xf32>) {
  // expected-error@+1 {{'tessel.broadcast' op root 2 is out of range for group size 2}}
  %0 = tessel.broadcast %x on @mesh axes = ["dp"] root = 2 : tensor<8xf32>
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @send_c3(%x: tensor<8xf32>) {
  // expected-error@+1 {{'tessel.send' op target 2 is out of range for group size 2}}
  tessel.send %x on @mesh axes = ["dp"] target = 2 tag = 0 : tensor<8xf32>
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @send_c3_tag(%x: tensor<8xf32>) {
  // expected-error@+1 {{'tessel.send' op tag must be non-negative, got -1}}
  tessel.send %x on @mesh axes = ["dp"] target = 1 tag = -1 : tensor<8xf32>
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @recv_c3(%x: tensor<8xf32>) {
  // expected-error@+1 {{'tessel.recv' op source -1 is out of range for group size 4}}
  %0 = tessel.recv on @mesh axes = ["tp"] source = -1 tag = 0 : tensor<8xf32>
  return
}

// -----

// tessel.async (FSDP's prefetched gathers, ZeRO's gradient reduce_scatters)
// is a unit attribute of all_gathers and reduce_scatters.
tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @async_not_a_gather(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error@+1 {{'tessel.add' op 'tessel.async' must be a unit attribute on a tessel.all_gather or tessel.reduce_scatter}}
  %0 = tessel.add %x, %x {tessel.async} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @async_not_unit(%x: tensor<8xf32>) -> tensor<16xf32> {
  // expected-error@+1 {{'tessel.all_gather' op 'tessel.async' must be a unit attribute on a tessel.all_gather or tessel.reduce_scatter}}
  %0 = tessel.all_gather %x on @mesh axes = ["dp"] dim = 0 {tessel.async = 1 : i64} : (tensor<8xf32>) -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @async_rs_not_unit(%x: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'tessel.reduce_scatter' op 'tessel.async' must be a unit attribute on a tessel.all_gather or tessel.reduce_scatter}}
  %0 = tessel.reduce_scatter sum %x on @mesh axes = ["dp"] dim = 0 {tessel.async = true} : (tensor<8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @async_not_a_collective(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error@+1 {{'tessel.all_reduce' op 'tessel.async' must be a unit attribute on a tessel.all_gather or tessel.reduce_scatter}}
  %0 = tessel.all_reduce sum %x on @mesh axes = ["dp"] {tessel.async} : tensor<8xf32>
  return %0 : tensor<8xf32>
}
