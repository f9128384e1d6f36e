// Round trip of the tessel attributes in their canonical printed forms.
// RUN: tessel-opt %s | tessel-opt | FileCheck %s

tessel.mesh @mesh ["dp"=2, "tp"=4, "pp"=2]

// CHECK-LABEL: func.func @specs
// CHECK-SAME: tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>
// CHECK-SAME: tessel.sharding = #tessel.sharding<@mesh, [{"dp", "tp"}, {}]>
// CHECK-SAME: tessel.sharding = #tessel.sharding<@mesh, [{"tp", pad = 2}, {}]>
// CHECK-SAME: tessel.sharding = #tessel.sharding<@mesh, [{}, {}], partial = [sum("tp"), max("pp")]>
// CHECK-SAME: tessel.sharding = #tessel.sharding<@mesh, []>
// CHECK-SAME: -> (tensor<8x32xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp"}, {}], partial = [mean("tp")]>})
func.func @specs(%a: tensor<8x32xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>},
                 %b: tensor<16x32xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp", "tp"}, {}]>},
                 %c: tensor<30x32xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp", pad = 2}, {}]>},
                 %d: tensor<8x32xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {}], partial = [sum("tp"), max("pp")]>},
                 %e: tensor<f32> {tessel.sharding = #tessel.sharding<@mesh, []>})
    -> (tensor<8x32xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp"}, {}], partial = [mean("tp")]>}) {
  return %a : tensor<8x32xf32>
}

// A multi-result op carries one spec per result.
// CHECK-LABEL: func.func @per_result
// CHECK: tessel.split {{.*}} {tessel.sharding = [#tessel.sharding<@mesh, [{"dp"}, {}]>, #tessel.sharding<@mesh, [{}, {"tp"}]>]}
func.func @per_result(%x: tensor<8x64xf32>) {
  %0:2 = tessel.split %x dim = 1 sizes = [32, 32] {tessel.sharding = [#tessel.sharding<@mesh, [{"dp"}, {}]>, #tessel.sharding<@mesh, [{}, {"tp"}]>]} : (tensor<8x64xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>)
  return
}

// Standalone attributes in a discardable dictionary.
// CHECK-LABEL: func.func @standalone
// CHECK-SAME: a.dim = #tessel.dim<{"dp", "tp", pad = 1}>
// CHECK-SAME: b.partial = #tessel.partial<min("pp")>
// CHECK-SAME: c.rule = #tessel.rule<([i, k], [k, j]) -> ([i, j]) {i=8, j=16, k=4} reduction={k}>
// CHECK-SAME: d.rule = #tessel.rule<([ij, 1]) -> ([i, j]) {i=4, j=6} need_replication={j}>
// CHECK-SAME: e.rule = #tessel.rule<() -> () {}>
func.func @standalone() attributes {
    a.dim = #tessel.dim<{"dp", "tp", pad = 1}>,
    b.partial = #tessel.partial<min("pp")>,
    c.rule = #tessel.rule<([i, k], [k, j]) -> ([i, j]) {i=8, j=16, k=4} reduction={k}>,
    d.rule = #tessel.rule<([ij, 1]) -> ([i, j]) {i=4, j=6} need_replication={j}>,
    e.rule = #tessel.rule<() -> () {}>} {
  return
}

// Factors beyond the 26th are named z_1, z_2, ...
// CHECK-LABEL: func.func @many_factors
// CHECK-SAME: #tessel.rule<([ijklmnopqrstuvwxyzabcdefghz_1z_2]) -> () {i=1, j=1, k=1, l=1, m=1, n=1, o=1, p=1, q=1, r=1, s=1, t=1, u=1, v=1, w=1, x=1, y=1, z=1, a=1, b=1, c=1, d=1, e=1, f=1, g=1, h=1, z_1=2, z_2=3}>
func.func @many_factors() attributes {r.rule = #tessel.rule<([ijklmnopqrstuvwxyzabcdefghz_1z_2]) -> () {i=1, j=1, k=1, l=1, m=1, n=1, o=1, p=1, q=1, r=1, s=1, t=1, u=1, v=1, w=1, x=1, y=1, z=1, a=1, b=1, c=1, d=1, e=1, f=1, g=1, h=1, z_1=2, z_2=3}>} {
  return
}

// A mesh of any number of axes.
// CHECK: tessel.mesh @one ["x"=1]
tessel.mesh @one ["x"=1]
// CHECK: tessel.mesh @five ["a"=2, "b"=2, "c"=2, "d"=2, "e"=2]
tessel.mesh @five ["a"=2, "b"=2, "c"=2, "d"=2, "e"=2]
