// A flat gradient bucket sliced back into its gradients: the first slice
// starts at byte 0 and the second at byte 2048 (64-byte aligned): views the
// buffer planner places inside the bucket. The third starts at byte 2052:
// a copy.
module {
  func.func @main(%b: tensor<2048xf32>) -> (tensor<512xf32>, tensor<512xf32>, tensor<512xf32>) attributes {tessel.input_names = ["b"]} {
    %0 = tessel.slice %b [0:512:1] : (tensor<2048xf32>) -> tensor<512xf32>
    %1 = tessel.slice %b [512:1024:1] : (tensor<2048xf32>) -> tensor<512xf32>
    %2 = tessel.slice %b [513:1025:1] : (tensor<2048xf32>) -> tensor<512xf32>
    return %0, %1, %2 : tensor<512xf32>, tensor<512xf32>, tensor<512xf32>
  }
}
