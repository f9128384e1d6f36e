// A training-mode BatchNorm that -tessel-batch-norm-train has not lowered
// has no gradient rule: the error of -tessel-autodiff names the ONNX node
// (tessel-autodiff-invalid.mlir).
func.func @main(%x: tensor<2x1x2x2xf32>) -> tensor<f32> {
  %s = tessel.weight "bn.weight" : tensor<1xf32>
  %b = tessel.weight "bn.bias" : tensor<1xf32>
  %m = tessel.weight "bn.running_mean" : tensor<1xf32>
  %v = tessel.weight "bn.running_var" : tensor<1xf32>
  %y = tessel.batch_norm_train %x, %s, %b, %m, %v : (tensor<2x1x2x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x1x2x2xf32> loc("/bn/BatchNormalization")
  %l = tessel.reduce_sum %y dims = [0, 1, 2, 3] : (tensor<2x1x2x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
