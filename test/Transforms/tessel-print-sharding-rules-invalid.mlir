// Ops without a sharding rule are propagation barriers: with warn-missing,
// each gets a warning; nothing fails.
// RUN: tessel-opt %s -tessel-print-sharding-rules=warn-missing -split-input-file -verify-diagnostics -allow-unregistered-dialect

func.func @custom_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-warning@+1 {{'my.custom' declares no sharding rule; it is a propagation barrier}}
  %0 = "my.custom"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Collectives belong to partitioned programs and declare no rule.
tessel.mesh @mesh ["tp"=2]
func.func @collective(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-warning@+1 {{'tessel.all_reduce' declares no sharding rule; it is a propagation barrier}}
  %0 = tessel.all_reduce sum %x on @mesh axes = ["tp"] : tensor<4xf32>
  return %0 : tensor<4xf32>
}
