// exp(x) @ y with the contracted dim (30) split over tp=4 with a pad of 2:
// the graph inputs are padded with zeros on load, exp(0) = 1 meets y's zero
// rows, and the partial sums are exact.
module {
  tessel.mesh @mesh ["tp"=4]
  func.func @main(%x: tensor<5x30xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp", pad = 2}]>}, %y: tensor<30x3xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp", pad = 2}, {}]>}) -> tensor<5x3xf32> attributes {tessel.input_names = ["x", "y"]} {
    %e = tessel.exp %x : tensor<5x30xf32>
    %r = tessel.matmul %e, %y : (tensor<5x30xf32>, tensor<30x3xf32>) -> tensor<5x3xf32>
    return %r : tensor<5x3xf32>
  }
}
