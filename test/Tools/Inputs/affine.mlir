// y = x @ w + b, weights by name from a file; the argument named by
// tessel.input_names (tessel-run --input features=...).
func.func @affine(%features: tensor<2x3xf32>) -> tensor<2x4xf32> attributes {tessel.input_names = ["features"]} {
  %w = tessel.weight "layer.w" : tensor<3x4xf32>
  %b = tessel.weight "layer.b" : tensor<4xf32>
  %m = tessel.matmul %features, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %y = tessel.add %m, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
