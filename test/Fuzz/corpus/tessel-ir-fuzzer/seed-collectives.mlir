tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @c(%x: tensor<8x192xf32>, %y: tensor<2x128x768xf32>) -> (tensor<8x192xf32>, tensor<32x48xf32>, tensor<2x128x96xf32>) {
  %0 = tessel.all_reduce sum %x on @mesh axes = ["tp"] : tensor<8x192xf32>
  %1 = tessel.all_to_all %x on @mesh axes = ["tp"] split_dim = 1 concat_dim = 0 : (tensor<8x192xf32>) -> tensor<32x48xf32>
  %2 = tessel.local_slice %y on @mesh axes = ["dp", "tp"] dim = 2 : (tensor<2x128x768xf32>) -> tensor<2x128x96xf32>
  return %0, %1, %2 : tensor<8x192xf32>, tensor<32x48xf32>, tensor<2x128x96xf32>
}
