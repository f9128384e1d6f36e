// bucket.mlir with the bucket's result read at once: the hand-off to the
// communication thread (async_overhead) is not hidden.
module {
  tessel.mesh @mesh ["dp"=2]
  func.func @main(%x: tensor<64x64xf32>, %y: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {tessel.input_names = ["x", "y"]} {
    %g = tessel.all_reduce sum %x on @mesh axes = ["dp"] {tessel.bucket = 0 : i64} : tensor<64x64xf32>
    %u = tessel.add %g, %y : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
    %m = tessel.matmul %u, %y : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
    return %m : tensor<64x64xf32>
  }
}
