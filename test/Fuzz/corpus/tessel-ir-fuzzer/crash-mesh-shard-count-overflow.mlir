tessel.mesh @mesh ["dp"=4294967296, "tp"=4294967296]
func.func @f(%x: tensor<8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp", "tp"}]>}) { return }
