// RUN: tessel-opt %s -tessel-propagate -split-input-file -verify-diagnostics

// Specs over two meshes in one module are refused.
tessel.mesh @a ["tp"=4]
tessel.mesh @b ["dp"=2]
func.func @two_meshes(%x: tensor<8xf32> {tessel.sharding = #tessel.sharding<@a, [{"tp"}]>}) -> tensor<8xf32> {
  // expected-error @+1 {{specs refer to several meshes (@a and @b); -tessel-propagate handles one mesh per module}}
  %0 = tessel.shard_constraint %x <@b, [{"dp"}]> : tensor<8xf32>
  return %0 : tensor<8xf32>
}
