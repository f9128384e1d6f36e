// GEMMs marked bf16_operands in each form the runtime's bf16 matmul takes:
// gemm with trans_a, alpha and a broadcast c scaled by beta; gemm with
// trans_b; matmul over a 2-D weight (batch folded into rows); batched
// matmul with the weight's batch broadcast, and with the source's.
module {
  func.func @main(%x: tensor<48x40xf32>, %w: tensor<24x48xf32>, %c: tensor<24xf32>,
                  %p: tensor<2x3x8x16xf32>, %q: tensor<3x16x4xf32>, %r: tensor<1x8x16xf32>,
                  %s: tensor<2x16x4xf32>)
      -> (tensor<40x24xf32>, tensor<40x24xf32>, tensor<2x3x8x4xf32>, tensor<2x3x8x24xf32>, tensor<2x8x4xf32>)
      attributes {tessel.input_names = ["x", "w", "c", "p", "q", "r", "s"],
                  tessel.output_names = ["gemm_ta", "gemm_tb", "batched", "folded", "src_broadcast"]} {
    %xr = tessel.round_float %x {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<48x40xf32>
    %wr = tessel.round_float %w {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<24x48xf32>
    %pr = tessel.round_float %p {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<2x3x8x16xf32>
    %qr = tessel.round_float %q {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<3x16x4xf32>
    %rr = tessel.round_float %r {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<1x8x16xf32>
    %sr = tessel.round_float %s {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<2x16x4xf32>
    %wt = tessel.transpose %wr perm = [1, 0] : (tensor<24x48xf32>) -> tensor<48x24xf32>
    %0 = tessel.gemm %xr, %wt, %c {trans_a, alpha = 0.5 : f32, beta = 2.0 : f32, bf16_operands} : (tensor<48x40xf32>, tensor<48x24xf32>, tensor<24xf32>) -> tensor<40x24xf32>
    %xt = tessel.transpose %xr perm = [1, 0] : (tensor<48x40xf32>) -> tensor<40x48xf32>
    %1 = tessel.gemm %xt, %wr {trans_b, bf16_operands} : (tensor<40x48xf32>, tensor<24x48xf32>) -> tensor<40x24xf32>
    %2 = tessel.matmul %pr, %qr {bf16_operands} : (tensor<2x3x8x16xf32>, tensor<3x16x4xf32>) -> tensor<2x3x8x4xf32>
    %ws = tessel.slice %wt [0:16:1, 0:24:1] : (tensor<48x24xf32>) -> tensor<16x24xf32>
    %3 = tessel.matmul %pr, %ws {bf16_operands} : (tensor<2x3x8x16xf32>, tensor<16x24xf32>) -> tensor<2x3x8x24xf32>
    %4 = tessel.matmul %rr, %sr {bf16_operands} : (tensor<1x8x16xf32>, tensor<2x16x4xf32>) -> tensor<2x8x4xf32>
    return %0, %1, %2, %3, %4 : tensor<40x24xf32>, tensor<40x24xf32>, tensor<2x3x8x4xf32>, tensor<2x3x8x24xf32>, tensor<2x8x4xf32>
  }
}
