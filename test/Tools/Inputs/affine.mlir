// y = x @ w + b, weights by name from a file; arguments named as written.
func.func @affine(%features: tensor<2x3xf32>) -> tensor<2x4xf32> {
  %w = tessel.weight "layer.w" : tensor<3x4xf32>
  %b = tessel.weight "layer.b" : tensor<4xf32>
  %m = tessel.matmul %features, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %y = tessel.add %m, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
