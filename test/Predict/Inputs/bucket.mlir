// An all_reduce issued as a gradient bucket (asynchronous), a matmul that
// does not read it, an add that does: [64, 64] f32 throughout.
module {
  tessel.mesh @mesh ["dp"=2]
  func.func @main(%x: tensor<64x64xf32>, %y: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {tessel.input_names = ["x", "y"]} {
    %g = tessel.all_reduce sum %x on @mesh axes = ["dp"] {tessel.bucket = 0 : i64} : tensor<64x64xf32>
    %m = tessel.matmul %y, %y : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
    %u = tessel.add %g, %m : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
    return %u : tensor<64x64xf32>
  }
}
