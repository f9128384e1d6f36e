tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @f(%x: tensor<8x16xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp"}, {}]>}) -> tensor<8x12xf32> {
  %w = tessel.weight "w" {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp", pad = 4}]>} : tensor<16x12xf32>
  %y = tessel.matmul %x, %w : (tensor<8x16xf32>, tensor<16x12xf32>) -> tensor<8x12xf32>
  %z = tessel.shard_constraint %y <@mesh, [{"dp"}, {}]> : tensor<8x12xf32>
  return %z : tensor<8x12xf32>
}
