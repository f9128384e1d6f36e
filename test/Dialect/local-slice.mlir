// RUN: tessel-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// Round trip.
tessel.mesh @mesh ["dp"=2, "tp"=4]
// CHECK-LABEL: func.func @local_slice
func.func @local_slice(%x: tensor<2x128x768xf32>) -> tensor<2x128x96xf32> {
  // CHECK: tessel.local_slice %{{.*}} on @mesh axes = ["dp", "tp"] dim = 2 : (tensor<2x128x768xf32>) -> tensor<2x128x96xf32>
  %0 = tessel.local_slice %x on @mesh axes = ["dp", "tp"] dim = 2 : (tensor<2x128x768xf32>) -> tensor<2x128x96xf32>
  return %0 : tensor<2x128x96xf32>
}

// -----

func.func @local_slice_c1(%x: tensor<8xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{refers to unknown mesh @nowhere}}
  %0 = tessel.local_slice %x on @nowhere axes = ["tp"] dim = 0 : (tensor<8xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

tessel.mesh @mesh ["tp"=4]
func.func @local_slice_c2_empty(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{needs at least one mesh axis}}
  %0 = tessel.local_slice %x on @mesh axes = [] dim = 0 : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

tessel.mesh @mesh ["tp"=4]
func.func @local_slice_c2_unknown(%x: tensor<8xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{axis "dp" is not in mesh @mesh}}
  %0 = tessel.local_slice %x on @mesh axes = ["dp"] dim = 0 : (tensor<8xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

tessel.mesh @mesh ["tp"=4]
func.func @local_slice_c2_twice(%x: tensor<16xf32>) -> tensor<1xf32> {
  // expected-error @+1 {{axis "tp" appears twice}}
  %0 = tessel.local_slice %x on @mesh axes = ["tp", "tp"] dim = 0 : (tensor<16xf32>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// -----

tessel.mesh @mesh ["tp"=4]
func.func @local_slice_c3_dim(%x: tensor<8xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{dim 1 is out of range [0, 1)}}
  %0 = tessel.local_slice %x on @mesh axes = ["tp"] dim = 1 : (tensor<8xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

tessel.mesh @mesh ["tp"=4]
func.func @local_slice_c3_rank(%x: tensor<8xf32>) -> tensor<2x1xf32> {
  // expected-error @+1 {{operand 'tensor<8xf32>' and result 'tensor<2x1xf32>' differ in rank or element type}}
  %0 = tessel.local_slice %x on @mesh axes = ["tp"] dim = 0 : (tensor<8xf32>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

tessel.mesh @mesh ["tp"=4]
func.func @local_slice_c4_other_dim(%x: tensor<8x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{dim 1 differs: 3 != 4}}
  %0 = tessel.local_slice %x on @mesh axes = ["tp"] dim = 0 : (tensor<8x3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

tessel.mesh @mesh ["tp"=4]
func.func @local_slice_c4_size(%x: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{dim 0 of size 8 over 4 ranks must give 2 per rank, not 4}}
  %0 = tessel.local_slice %x on @mesh axes = ["tp"] dim = 0 : (tensor<8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
