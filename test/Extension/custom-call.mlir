// tessel.custom_call: verified against its target's registration, its
// sharding rule the target's (tessel-opt --load-plugin).
// RUN: tessel-opt --load-plugin %plugins/libtessel-example-plugin.so %s | FileCheck %s
// RUN: tessel-opt --load-plugin %plugins/libtessel-example-plugin.so %s --tessel-print-sharding-rules 2>&1 | FileCheck %s --check-prefix=RULE
// RUN: not tessel-opt %s 2>&1 | FileCheck %s --check-prefix=NOPLUGIN

// CHECK-LABEL: func.func @fancy
// CHECK: tessel.custom_call "example.FancyGelu"(%x) {attrs = {alpha = 2.000000e+00 : f32}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// RULE: #tessel.rule<([i, j]) -> ([i, j]) {i=4, j=8}>
// NOPLUGIN: error: 'tessel.custom_call' op custom op 'example.FancyGelu' is not registered: load the plugin that defines it (--load-plugin lib.so)
func.func @fancy(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tessel.custom_call "example.FancyGelu"(%x) {attrs = {alpha = 2.0 : f32}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

