// A linear model on test/models/mlp's last layer (fc3: 256 -> 10), trained
// with mse against a NumPy reference (ref_linear.py).
module {
  func.func @main(%x: tensor<8x256xf32>) -> tensor<8x10xf32>
      attributes {tessel.input_names = ["x"], tessel.output_names = ["y"]} {
    %w = tessel.weight "fc3.weight" : tensor<10x256xf32>
    %b = tessel.weight "fc3.bias" : tensor<10xf32>
    %y = tessel.gemm %x, %w, %b {trans_b} : (tensor<8x256xf32>, tensor<10x256xf32>, tensor<10xf32>) -> tensor<8x10xf32>
    return %y : tensor<8x10xf32>
  }
}
