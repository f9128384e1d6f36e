// A model whose output is an integer tensor: no cross_entropy on it.
module {
  func.func @main(%x: tensor<8x256xf32>) -> tensor<8x10xi64>
      attributes {tessel.input_names = ["x"], tessel.output_names = ["ids"]} {
    %w = tessel.weight "fc3.weight" : tensor<10x256xf32>
    %b = tessel.weight "fc3.bias" : tensor<10xf32>
    %y = tessel.gemm %x, %w, %b {trans_b} : (tensor<8x256xf32>, tensor<10x256xf32>, tensor<10xf32>) -> tensor<8x10xf32>
    %i = tessel.cast %y : tensor<8x10xf32> -> tensor<8x10xi64>
    return %i : tensor<8x10xi64>
  }
}
