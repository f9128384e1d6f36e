// Every verifier message of tessel.fused_elementwise (TesselOps.td, C1-C4).
// RUN: tessel-opt %s -split-input-file -verify-diagnostics

func.func @args_count(%x: tensor<4xf32>) {
  // expected-error@+1 {{needs at least one instruction and three args per instruction, got 1 ops and 2 args}}
  %0 = tessel.fused_elementwise %x {ops = ["neg"], args = array<i64: 0, -1>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @unknown_op(%x: tensor<4xf32>) {
  // expected-error@+1 {{instruction 0: 'matmul' is no fusable elementwise op}}
  %0 = tessel.fused_elementwise %x {ops = ["matmul"], args = array<i64: 0, 0, 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @reads_later(%x: tensor<4xf32>) {
  // expected-error@+1 {{instruction 0 ('add') reads value 1, which is not defined before it}}
  %0 = tessel.fused_elementwise %x {ops = ["add"], args = array<i64: 0, 1, 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @unary_second(%x: tensor<4xf32>) {
  // expected-error@+1 {{instruction 0 ('neg') reads value 0, which is not -1}}
  %0 = tessel.fused_elementwise %x {ops = ["neg"], args = array<i64: 0, 0, 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @flag(%x: tensor<4xf32>) {
  // expected-error@+1 {{instruction 0 ('tanh') has flag 1}}
  %0 = tessel.fused_elementwise %x {ops = ["tanh"], args = array<i64: 0, -1, 1>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Arithmetic reads f32 only: a half goes through a cast.
func.func @half_operand(%x: tensor<4xbf16>) {
  // expected-error@+1 {{instruction 0 ('neg') reads value 0 of 'bf16': only a cast reads a half}}
  %0 = tessel.fused_elementwise %x {ops = ["neg"], args = array<i64: 0, -1, 0>} : (tensor<4xbf16>) -> tensor<4xf32>
  return
}

// -----

func.func @cast_target(%x: tensor<4xf32>) {
  // expected-error@+1 {{instruction 0 ('cast') has target 3: 0 (f32), 1 (bf16) or 2 (f16)}}
  %0 = tessel.fused_elementwise %x {ops = ["cast"], args = array<i64: 0, -1, 3>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @result_type(%x: tensor<4xbf16>) {
  // expected-error@+1 {{result is 'f16' but the last instruction's value is 'bf16'}}
  %0 = tessel.fused_elementwise %x {ops = ["cast", "neg", "cast"], args = array<i64: 0, -1, 0, 1, -1, 0, 2, -1, 1>} : (tensor<4xbf16>) -> tensor<4xf16>
  return
}

// -----

func.func @input_type(%x: tensor<4xf64>) {
  // expected-error@+1 {{input 0 has type 'tensor<4xf64>': an input is f32, bf16 or f16, of the result's shape, one element or the result's trailing dims}}
  %0 = tessel.fused_elementwise %x {ops = ["cast"], args = array<i64: 0, -1, 0>} : (tensor<4xf64>) -> tensor<4xf32>
  return
}

// -----

func.func @input_shape(%x: tensor<4x3xf32>, %m: tensor<4x1xf32>) {
  // expected-error@+1 {{input 1 has type 'tensor<4x1xf32>'}}
  %0 = tessel.fused_elementwise %x, %m {ops = ["add"], args = array<i64: 0, 1, 0>} : (tensor<4x3xf32>, tensor<4x1xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @result_f64(%x: tensor<4xf64>) {
  // expected-error@+1 {{result must be f32, bf16 or f16, got 'tensor<4xf64>'}}
  %0 = tessel.fused_elementwise %x {ops = ["neg"], args = array<i64: 0, -1, 0>} : (tensor<4xf64>) -> tensor<4xf64>
  return
}
