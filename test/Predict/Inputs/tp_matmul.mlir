// x @ y with the contracted dim split over tp=2: each rank multiplies
// [64, 64] by [64, 32] (2 * 64 * 32 * 64 = 262144 FLOPs) and the partial
// [64, 32] f32 result (8192 bytes) is all-reduced to make the output whole.
module {
  tessel.mesh @mesh ["tp"=2]
  func.func @main(%x: tensor<64x128xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>}, %y: tensor<128x32xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}, {}]>}) -> tensor<64x32xf32> attributes {tessel.input_names = ["x", "y"], tessel.output_names = ["r"]} {
    %r = tessel.matmul %x, %y : (tensor<64x128xf32>, tensor<128x32xf32>) -> tensor<64x32xf32>
    return %r : tensor<64x32xf32>
  }
}
