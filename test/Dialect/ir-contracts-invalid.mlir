// RUN: tessel-opt %s -split-input-file -verify-diagnostics

// The IR contracts (docs/ir-contracts.md): each malformed one is an error
// that names it.

// expected-error @+1 {{'tessel.model' must be a string on a module}}
module attributes {tessel.model = 3 : i64} {}

// -----

tessel.mesh @mesh ["tp"=2]
func.func @f() {
  // expected-error @+1 {{'tessel.source_slice' must be array<i64: dim, start, limit> with 0 <= start < limit}}
  %w = tessel.weight "w" {tessel.source_slice = array<i64: 1, 4, 2>} : tensor<4x2xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'tessel.global_sharding' must be a #tessel.sharding}}
  %w = tessel.weight "w" {tessel.global_sharding = "x"} : tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tessel.global_sharding' is only allowed on tessel.weight}}
  %y = tessel.relu %x {tessel.global_sharding = #tessel.sharding<@m, [{}]>} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// expected-error @+1 {{'tessel.input_names' has 1 entries, the function has 2 arguments}}
func.func @f(%x: tensor<4xf32>, %y: tensor<4xf32>) attributes {tessel.input_names = ["x"]} {
  return
}

// -----

// expected-error @+1 {{'tessel.output_names' entry 0 must be a string}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tessel.output_names = [1 : i64]} {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{'tessel.global_arg_shardings' entry 0 must be a #tessel.sharding or unit}}
func.func @f(%x: tensor<4xf32>) attributes {tessel.global_arg_shardings = ["x"]} {
  return
}

// -----

// expected-error @+1 {{unknown tessel attribute 'tessel.global_shardings'}}
func.func @f(%x: tensor<4xf32>) attributes {tessel.global_shardings = []} {
  return
}
