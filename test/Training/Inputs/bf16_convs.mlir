// Convolutions marked bf16_operands in each form the CPU's bf16 kernels
// take: a strided, padded conv2d with a bias; a grouped, dilated one; a
// 1x1 one (f32 1x1 convs stay on NCHW, bf16 ones do not); the backward
// data and backward weight of the first.
module {
  func.func @main(%x: tensor<2x4x9x9xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<6xf32>,
                  %g: tensor<6x2x3x3xf32>, %p: tensor<5x4x1x1xf32>, %dy: tensor<2x6x5x5xf32>)
      -> (tensor<2x6x5x5xf32>, tensor<2x6x7x7xf32>, tensor<2x5x9x9xf32>, tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>)
      attributes {tessel.input_names = ["x", "w", "b", "g", "p", "dy"],
                  tessel.output_names = ["strided", "grouped", "pointwise", "backward_data", "backward_weight"]} {
    %xr = tessel.round_float %x {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<2x4x9x9xf32>
    %wr = tessel.round_float %w {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<6x4x3x3xf32>
    %gr = tessel.round_float %g {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<6x2x3x3xf32>
    %pr = tessel.round_float %p {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<5x4x1x1xf32>
    %dyr = tessel.round_float %dy {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<2x6x5x5xf32>
    %0 = tessel.conv2d %xr, %wr, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, bf16_operands} : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>, tensor<6xf32>) -> tensor<2x6x5x5xf32>
    %1 = tessel.conv2d %xr, %gr {pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 2, 2>, group = 2 : i64, bf16_operands} : (tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>) -> tensor<2x6x7x7xf32>
    %2 = tessel.conv2d %xr, %pr {bf16_operands} : (tensor<2x4x9x9xf32>, tensor<5x4x1x1xf32>) -> tensor<2x5x9x9xf32>
    %3 = tessel.conv2d_backward_data %dyr, %wr {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, bf16_operands} : (tensor<2x6x5x5xf32>, tensor<6x4x3x3xf32>) -> tensor<2x4x9x9xf32>
    %4 = tessel.conv2d_backward_weight %xr, %dyr {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, bf16_operands} : (tensor<2x4x9x9xf32>, tensor<2x6x5x5xf32>) -> tensor<6x4x3x3xf32>
    return %0, %1, %2, %3, %4 : tensor<2x6x5x5xf32>, tensor<2x6x7x7xf32>, tensor<2x5x9x9xf32>, tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>
  }
}
