// An LM head tied to the token embedding (a gemm with trans_b reading the
// embedding table itself), for test/Plan/megatron-plan.test.
module {
  func.func @main(%ids: tensor<8xi64>) -> tensor<8x16xf32> {
    %wte = tessel.weight "wte" : tensor<16x4xf32>
    %g = tessel.weight "ln.g" : tensor<4xf32>
    %e = tessel.gather %wte[%ids] axis = 0 : (tensor<16x4xf32>, tensor<8xi64>) -> tensor<8x4xf32>
    %n = tessel.layer_norm %e, %g axis = 1 : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
    %y = tessel.gemm %n, %wte {trans_b} : (tensor<8x4xf32>, tensor<16x4xf32>) -> tensor<8x16xf32>
    return %y : tensor<8x16xf32>
  }
}
