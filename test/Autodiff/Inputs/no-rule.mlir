// A ResNet-like stem whose max pool has no gradient rule yet: the error of
// -tessel-autodiff names the ONNX node (tessel-autodiff-invalid.mlir).
func.func @main(%x: tensor<1x1x4x4xf32>) -> tensor<f32> {
  %w = tessel.weight "features.conv.weight" : tensor<1x1x4x4xf32>
  %y = tessel.mul %x, %w : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> loc("/features/conv/Mul")
  %p = tessel.max_pool %y {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> loc("/features/pool/MaxPool")
  %l = tessel.reduce_sum %p dims = [0, 1, 2, 3] : (tensor<1x1x2x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
