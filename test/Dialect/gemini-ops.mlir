// The Gemini op (GeminiOps.td) round-trips, and each verifier message,
// named after the constraint of the op's description it enforces.
// RUN: tessel-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @ok
// CHECK: %[[C:.*]]:2 = tessel.chunk_fetch %w, %b {chunk = 3 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>)
// CHECK: return %[[C]]#1
func.func @ok(%w: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %c:2 = tessel.chunk_fetch %w, %b {chunk = 3 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>)
  return %c#1 : tensor<8xf32>
}

// -----

// chunk_fetch_c1
func.func @f() {
  // expected-error@+1 {{'tessel.chunk_fetch' op fetches no parameter}}
  tessel.chunk_fetch {chunk = 0 : i64} : () -> ()
  return
}

// -----

// chunk_fetch_c2
func.func @f(%w: tensor<4x8xf32>) {
  // expected-error@+1 {{'tessel.chunk_fetch' op result 0 has type 'tensor<8x4xf32>', operand 0 'tensor<4x8xf32>'}}
  %c = tessel.chunk_fetch %w {chunk = 0 : i64} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return
}

// -----

// chunk_fetch_c2
func.func @f(%w: tensor<4x8xf32>) {
  // expected-error@+1 {{'tessel.chunk_fetch' op has 2 results for 1 operands}}
  %c:2 = tessel.chunk_fetch %w {chunk = 0 : i64} : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

// chunk_fetch_c3
func.func @f(%w: tensor<4x8xf32>) {
  // expected-error@+1 {{'tessel.chunk_fetch' op chunk -1 is negative}}
  %c = tessel.chunk_fetch %w {chunk = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// The chunk mark: an i64 >= 0 on a weight.
func.func @f() {
  // expected-error@+1 {{'tessel.weight' op 'tessel.chunk' must be an i64 >= 0 on a tessel.weight}}
  %w = tessel.weight "w" {tessel.chunk = -1 : i64} : tensor<f32>
  return
}
