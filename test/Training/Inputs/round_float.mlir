// tessel.round_float to bf16 (result 0) and fp16 (result 1).
module {
  func.func @main(%x: tensor<4096xf32>) -> (tensor<4096xf32>, tensor<4096xf32>)
      attributes {tessel.input_names = ["x"], tessel.output_names = ["bf16", "fp16"]} {
    %b = tessel.round_float %x {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<4096xf32>
    %h = tessel.round_float %x {exponent_bits = 5 : i64, mantissa_bits = 10 : i64} : tensor<4096xf32>
    return %b, %h : tensor<4096xf32>, tensor<4096xf32>
  }
}
