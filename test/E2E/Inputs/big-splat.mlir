// A splat constant of float[65536, 65536] (16 GiB once its bytes are made):
// the exporter refuses it, naming the op and both sizes, before it allocates.
module {
  func.func @main(%x: tensor<65536x65536xf32>) -> tensor<65536x65536xf32> attributes {tessel.input_names = ["x"]} {
    %c = tessel.constant dense<2.0> : tensor<65536x65536xf32> loc("/big_splat")
    %y = tessel.add %x, %c : (tensor<65536x65536xf32>, tensor<65536x65536xf32>) -> tensor<65536x65536xf32>
    return %y : tensor<65536x65536xf32>
  }
}
