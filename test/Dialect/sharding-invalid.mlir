// Every verifier message of #tessel.sharding and its placement.
// RUN: tessel-opt %s -split-input-file -verify-diagnostics -allow-unregistered-dialect

tessel.mesh @mesh ["dp"=2, "tp"=4]
// sharding_c1: an axis splits at most one dim.
// expected-error@+1 {{axis "tp" is used twice (again in dim 1)}}
func.func @sharding_c1_two_dims(%a: tensor<8x8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}, {"tp"}]>}) {
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
// expected-error@+1 {{axis "tp" is used twice (again as partial)}}
func.func @sharding_c1_partial(%a: tensor<8x8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}, {}], partial = [sum("tp")]>}) {
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
// expected-error@+1 {{axis "dp" is used twice in one dim}}
func.func @dim_c2(%a: tensor<8x8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp", "dp"}, {}]>}) {
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
// expected-error@+1 {{pad must be non-negative, got -1}}
func.func @dim_c1(%a: tensor<8x8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp", pad = -1}, {}]>}) {
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
// expected-error@+1 {{pad 2 on a dim that no axis splits}}
func.func @dim_c3(%a: tensor<8x8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{pad = 2}, {}]>}) {
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
// expected-error@+1 {{unknown reduction kind 'prod' (expected sum, max, min or mean)}}
func.func @partial_kind(%a: tensor<8x8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {}], partial = [prod("tp")]>}) {
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
// sharding_c2: the mesh must exist.
// expected-error@+1 {{'func.func' op argument 0: sharding refers to unknown mesh @nomesh}}
func.func @sharding_c2_mesh(%a: tensor<8x8xf32> {tessel.sharding = #tessel.sharding<@nomesh, [{}, {}]>}) {
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
// sharding_c2: every axis must be in the mesh.
// expected-error@+1 {{'func.func' op argument 0: dim 1 is split over axis "sp", which mesh @mesh lacks (it has dp, tp)}}
func.func @sharding_c2_axis(%a: tensor<8x8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"sp"}]>}) {
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
// expected-error@+1 {{'func.func' op argument 0: partial axis "sp" is not in mesh @mesh (it has dp, tp)}}
func.func @sharding_c2_partial(%a: tensor<8x8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {}], partial = [sum("sp")]>}) {
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
// sharding_c3: one dim spec per tensor dim.
// expected-error@+1 {{'func.func' op argument 0: sharding has 1 dim specs but the tensor 'tensor<8x8xf32>' has rank 2}}
func.func @sharding_c3(%a: tensor<8x8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}]>}) {
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
// sharding_c4: a dim of 30 over tp=4 needs a pad.
// expected-error@+1 {{'func.func' op argument 0: dim 1 of size 30 is not divisible by axis "tp" (4 shards); add pad = 2 to the dim or choose another axis}}
func.func @sharding_c4_no_pad(%a: tensor<8x30xf32> {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>}) {
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
// expected-error@+1 {{'func.func' op argument 0: dim 0 of size 30 with pad 1 is not divisible by axis "dp", "tp" (8 shards)}}
func.func @sharding_c4_wrong_pad(%a: tensor<30x8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp", "tp", pad = 1}, {}]>}) {
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
// expected-error@+1 {{'func.func' op argument 0: dim 0 has pad 10, more than the shards after the first hold (3 of 3)}}
func.func @sharding_c4_pad_too_big(%a: tensor<2x8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"tp", pad = 10}, {}]>}) {
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
// The message names the weight.
func.func @sharding_c4_weight() {
  // expected-error@+1 {{'tessel.weight' op weight "transformer.h.0.mlp.c_fc.weight": dim 1 of size 30 is not divisible by axis "tp" (4 shards); add pad = 2 to the dim or choose another axis}}
  %w = tessel.weight "transformer.h.0.mlp.c_fc.weight" {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>} : tensor<768x30xf32>
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
// expected-error@+1 {{'func.func' op function result 0: dim 0 is split over axis "pp", which mesh @mesh lacks (it has dp, tp)}}
func.func @result_spec() -> (tensor<8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"pp"}]>}) {
  %c = tessel.constant dense<0.0> : tensor<8xf32>
  return %c : tensor<8xf32>
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @one_spec_multi_result(%x: tensor<8x64xf32>) {
  // expected-error@+1 {{has 2 results; 'tessel.sharding' must be an array of one #tessel.sharding per result}}
  %0:2 = tessel.split %x dim = 1 sizes = [32, 32] {tessel.sharding = #tessel.sharding<@mesh, [{}, {}]>} : (tensor<8x64xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>)
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @spec_count(%x: tensor<8x64xf32>) {
  // expected-error@+1 {{has 2 results but 'tessel.sharding' lists 1 specs}}
  %0:2 = tessel.split %x dim = 1 sizes = [32, 32] {tessel.sharding = [#tessel.sharding<@mesh, [{}, {}]>]} : (tensor<8x64xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>)
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @spec_entry(%x: tensor<8x64xf32>) {
  // expected-error@+1 {{'tessel.sharding' entry 1 is not a #tessel.sharding}}
  %0:2 = tessel.split %x dim = 1 sizes = [32, 32] {tessel.sharding = [#tessel.sharding<@mesh, [{}, {}]>, 3]} : (tensor<8x64xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>)
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @spec_kind(%x: tensor<8x64xf32>) {
  // expected-error@+1 {{'tessel.sharding' must be a #tessel.sharding or an array of them}}
  %0 = tessel.relu %x {tessel.sharding = 1} : tensor<8x64xf32>
  return
}

// -----

func.func @spec_not_tensor() {
  // expected-error@+1 {{result 0: a sharding needs a ranked tensor, got 'i32'}}
  %0 = "test.op"() {tessel.sharding = #tessel.sharding<@mesh, []>} : () -> i32
  return
}

// -----

func.func @unknown_attr() {
  // expected-error@+1 {{unknown tessel attribute 'tessel.foo'}}
  %0 = tessel.constant dense<0.0> : tensor<f32> {tessel.foo = 1}
  return
}

// -----

func.func @rule_kind() {
  // expected-error@+1 {{'tessel.rule' must be a #tessel.rule}}
  %0 = tessel.constant dense<0.0> : tensor<f32> {tessel.rule = 1}
  return
}

// -----

// expected-error@+1 {{unknown tessel attribute 'tessel.foo' on argument 0}}
func.func @unknown_arg_attr(%a: tensor<8xf32> {tessel.foo = 1}) {
  return
}

// -----

// expected-error@+1 {{argument 0: 'tessel.sharding' must be a #tessel.sharding}}
func.func @arg_attr_kind(%a: tensor<8xf32> {tessel.sharding = 1}) {
  return
}

// -----

tessel.mesh @mesh ["dp"=2, "tp"=4]
func.func @constraint_c1(%x: tensor<8x30xf32>) {
  // expected-error@+1 {{'tessel.shard_constraint' op constraint: dim 1 of size 30 is not divisible by axis "tp" (4 shards); add pad = 2 to the dim or choose another axis}}
  %0 = tessel.shard_constraint %x <@mesh, [{}, {"tp"}]> : tensor<8x30xf32>
  return
}
