// No function returns a scalar float as its last result: nothing to
// differentiate (tessel-autodiff-invalid.mlir).
func.func @logits(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  return %x : tensor<2x4xf32>
}
