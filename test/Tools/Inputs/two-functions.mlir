// Two functions, no weights: tesselc needs --entry, and no --weights.
func.func @double(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tessel.add %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func @square(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tessel.mul %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
