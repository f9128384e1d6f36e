// RUN: tessel-opt %s -tessel-propagate | FileCheck %s --check-prefix=PROP
// RUN: tessel-opt %s -tessel-propagate -tessel-partition | FileCheck %s --check-prefix=PART

// Every op kind whose #tessel.rule has a reduction factor, with that factor
// split over "tp": propagation makes the result partial with the kind the op
// declares through ShardingRuleOpInterface::getReductionKind, and
// partitioning resolves it with an all_reduce (or a reduce_scatter) of the
// same kind. max for reduce_max; mean for reduce_mean and global_avg_pool;
// sum for reduce_sum, matmul, gemm and conv2d (the interface's default).

tessel.mesh @mesh ["dp"=2, "tp"=4]

// PROP-LABEL: func.func @reduce_max
// PROP: tessel.reduce_max {{.*}}#tessel.sharding<@mesh, [{"dp"}], partial = [max("tp")]>
// PART-LABEL: func.func @reduce_max
// PART: %[[R:.*]] = tessel.reduce_max %x dims = [1] : (tensor<4x16xf32>) -> tensor<4xf32>
// PART: tessel.all_reduce max %[[R]] on @mesh axes = ["tp"] : tensor<4xf32>
func.func @reduce_max(%x: tensor<8x64xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp"}, {"tp"}]>}) -> tensor<8xf32> {
  %0 = tessel.reduce_max %x dims = [1] : (tensor<8x64xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// A partial max whose user wants the dim split over the partial axis.
// PROP-LABEL: func.func @reduce_max_scatter
// PROP: tessel.reduce_max {{.*}}#tessel.sharding<@mesh, [{}], partial = [max("tp")]>
// PART-LABEL: func.func @reduce_max_scatter
// PART: %[[R:.*]] = tessel.reduce_max
// PART: tessel.reduce_scatter max %[[R]] on @mesh axes = ["tp"] dim = 0 : (tensor<8xf32>) -> tensor<2xf32>
func.func @reduce_max_scatter(%x: tensor<8x64xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>}) -> tensor<8xf32> {
  %0 = tessel.reduce_max %x dims = [1] : (tensor<8x64xf32>) -> tensor<8xf32>
  %1 = tessel.shard_constraint %0 <@mesh, [{"tp"}]> : tensor<8xf32>
  %2 = tessel.exp %1 : tensor<8xf32>
  return %2 : tensor<8xf32>
}

// PROP-LABEL: func.func @reduce_mean
// PROP: tessel.reduce_mean {{.*}}#tessel.sharding<@mesh, [{}, {}], partial = [mean("tp")]>
// PART-LABEL: func.func @reduce_mean
// PART: %[[R:.*]] = tessel.reduce_mean %x dims = [1] keep_dims : (tensor<8x16xf32>) -> tensor<8x1xf32>
// PART: tessel.all_reduce mean %[[R]] on @mesh axes = ["tp"] : tensor<8x1xf32>
func.func @reduce_mean(%x: tensor<8x64xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>}) -> tensor<8x1xf32> {
  %0 = tessel.reduce_mean %x dims = [1] keep_dims : (tensor<8x64xf32>) -> tensor<8x1xf32>
  return %0 : tensor<8x1xf32>
}

// PROP-LABEL: func.func @global_avg_pool
// PROP: tessel.global_avg_pool {{.*}}#tessel.sharding<@mesh, [{}, {}, {}, {}], partial = [mean("tp")]>
// PART-LABEL: func.func @global_avg_pool
// PART: %[[R:.*]] = tessel.global_avg_pool %x : (tensor<4x16x2x8xf32>) -> tensor<4x16x1x1xf32>
// PART: tessel.all_reduce mean %[[R]] on @mesh axes = ["tp"] : tensor<4x16x1x1xf32>
func.func @global_avg_pool(%x: tensor<4x16x8x8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {}, {"tp"}, {}]>}) -> tensor<4x16x1x1xf32> {
  %0 = tessel.global_avg_pool %x : (tensor<4x16x8x8xf32>) -> tensor<4x16x1x1xf32>
  return %0 : tensor<4x16x1x1xf32>
}

// PROP-LABEL: func.func @reduce_sum
// PROP: tessel.reduce_sum {{.*}}#tessel.sharding<@mesh, [{}], partial = [sum("tp")]>
// PART-LABEL: func.func @reduce_sum
// PART: %[[R:.*]] = tessel.reduce_sum %x dims = [1] : (tensor<8x16xf32>) -> tensor<8xf32>
// PART: tessel.all_reduce sum %[[R]] on @mesh axes = ["tp"] : tensor<8xf32>
func.func @reduce_sum(%x: tensor<8x64xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>}) -> tensor<8xf32> {
  %0 = tessel.reduce_sum %x dims = [1] : (tensor<8x64xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// PROP-LABEL: func.func @matmul
// PROP: tessel.matmul {{.*}}#tessel.sharding<@mesh, [{}, {}], partial = [sum("tp")]>
// PART-LABEL: func.func @matmul
// PART: %[[R:.*]] = tessel.matmul %a, %b : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
// PART: tessel.all_reduce sum %[[R]] on @mesh axes = ["tp"] : tensor<8x16xf32>
func.func @matmul(%a: tensor<8x64xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>}, %b: tensor<64x16xf32>) -> tensor<8x16xf32> {
  %0 = tessel.matmul %a, %b : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// PROP-LABEL: func.func @gemm
// PROP: tessel.gemm {{.*}}#tessel.sharding<@mesh, [{}, {}], partial = [sum("tp")]>
// PART-LABEL: func.func @gemm
// PART: %[[R:.*]] = tessel.gemm %a, %b : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
// PART: tessel.all_reduce sum %[[R]] on @mesh axes = ["tp"] : tensor<8x16xf32>
func.func @gemm(%a: tensor<8x64xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>}, %b: tensor<64x16xf32>) -> tensor<8x16xf32> {
  %0 = tessel.gemm %a, %b : (tensor<8x64xf32>, tensor<64x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// PROP-LABEL: func.func @conv2d
// PROP: tessel.conv2d {{.*}}#tessel.sharding<@mesh, [{}, {}, {}, {}], partial = [sum("tp")]>
// PART-LABEL: func.func @conv2d
// PART: %[[R:.*]] = tessel.conv2d %x, %w : (tensor<4x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<4x8x6x6xf32>
// PART: tessel.all_reduce sum %[[R]] on @mesh axes = ["tp"] : tensor<4x8x6x6xf32>
func.func @conv2d(%x: tensor<4x16x8x8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}, {}, {}]>}, %w: tensor<8x16x3x3xf32>) -> tensor<4x8x6x6xf32> {
  %0 = tessel.conv2d %x, %w : (tensor<4x16x8x8xf32>, tensor<8x16x3x3xf32>) -> tensor<4x8x6x6xf32>
  return %0 : tensor<4x8x6x6xf32>
}
