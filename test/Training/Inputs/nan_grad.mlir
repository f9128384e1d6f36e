// A model whose loss is finite while a gradient is not: y = x * sqrt(w)
// with w = [1, 0, 4, 9] (nan_data.py's sqrt_w.npz). d sqrt(w) / dw =
// 1 / (2 sqrt(w)) is infinite at w = 0, so the first update makes w[1]
// infinite and the second step's loss too (test/Training/non-finite.test).
module {
  func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32>
      attributes {tessel.input_names = ["x"], tessel.output_names = ["y"]} {
    %w = tessel.weight "w" : tensor<4xf32>
    %s = tessel.sqrt %w : tensor<4xf32> loc("sqrt_w")
    %y = tessel.mul %x, %s : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32> loc("scale")
    return %y : tensor<2x4xf32>
  }
}
