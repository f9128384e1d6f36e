// RUN: tessel-opt %s -split-input-file -verify-diagnostics

// The IR contract `tessel.gradients` (docs/ir-contracts.md): on a function,
// one non-empty string per gradient, at most one per result.

// expected-error @below {{'tessel.gradients' names 2 gradients, the function has 1 results}}
func.func @too_many(%x: tensor<f32>) -> tensor<f32> attributes {tessel.gradients = ["a", "b"]} {
  return %x : tensor<f32>
}

// -----

// expected-error @below {{'tessel.gradients' entry 0 must be a non-empty string}}
func.func @not_a_string(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>) attributes {tessel.gradients = [1 : i64]} {
  return %x, %x : tensor<f32>, tensor<f32>
}

// -----

// expected-error @below {{'tessel.gradients' must be an array on a function}}
func.func @not_an_array(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>) attributes {tessel.gradients = "w"} {
  return %x, %x : tensor<f32>, tensor<f32>
}

// -----

func.func @on_an_op() -> tensor<f32> {
  // expected-error @below {{'tessel.gradients' must be an array on a function}}
  %w = tessel.weight "w" {tessel.gradients = ["w"]} : tensor<f32>
  return %w : tensor<f32>
}
