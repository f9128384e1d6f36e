// tessel.custom_call against its target's registration: clear errors.
// RUN: tessel-opt --load-plugin %plugins/libtessel-example-plugin.so %s -split-input-file -verify-diagnostics


func.func @unknown(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{custom op 'example.Nope' is not registered: load the plugin that defines it (--load-plugin lib.so)}}
  %0 = tessel.custom_call "example.Nope"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @wrong_result(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'example.FancyGelu': result 0 has type 'tensor<8x4xf32>', its type rule gives f32[4, 8]}}
  %0 = tessel.custom_call "example.FancyGelu"(%x) : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

func.func @wrong_operands(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'example.FancyGelu': takes 1 operand(s), got 2}}
  %0 = tessel.custom_call "example.FancyGelu"(%x, %x) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
