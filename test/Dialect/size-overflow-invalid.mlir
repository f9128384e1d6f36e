// Products of mesh sizes, shard counts and dims in the verifiers are checked
// (issue 18): a mesh of more than 2^31 devices is refused, and every
// verifier that multiplies axis sizes refuses what does not fit, even when it
// runs before the mesh's own verifier. Never a SIGFPE.
// RUN: tessel-opt %s -split-input-file -verify-diagnostics
// The fuzz corpus's reproducer, through both tools.
// RUN: not tessel-opt %S/../Fuzz/corpus/tessel-ir-fuzzer/crash-mesh-shard-count-overflow.mlir 2>&1 | FileCheck %s --check-prefix=REPRO
// RUN: cp %S/../Fuzz/corpus/tessel-ir-fuzzer/crash-mesh-shard-count-overflow.mlir %t.mlir
// RUN: not tesselc %t.mlir -o %t.tsl 2>&1 | FileCheck %s --check-prefix=REPRO
// REPRO: error: 'tessel.mesh' op has axes of sizes [4294967296, 4294967296], more than 2147483648 devices in all

// expected-error@+1 {{'tessel.mesh' op has axes of sizes [4294967296, 4294967296], more than 2147483648 devices in all}}
tessel.mesh @mesh ["dp"=4294967296, "tp"=4294967296]

// -----

// expected-error@+1 {{has axes of sizes [65536, 65536], more than 2147483648 devices in all}}
tessel.mesh @mesh ["dp"=65536, "tp"=65536]

// -----

// The largest mesh there may be.
tessel.mesh @mesh ["dp"=65536, "tp"=32768]
func.func @largest(%a: tensor<2147483648xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp", "tp"}]>}) {
  return
}

// -----

// The function comes first; the mesh is still verified before the sharding
// that uses it (and the sharding verifier checks its products regardless).
func.func @before_mesh(%a: tensor<8xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp", "tp"}]>}) {
  return
}
// expected-error@+1 {{'tessel.mesh' op has axes of sizes [4294967296, 4294967296], more than 2147483648 devices in all}}
tessel.mesh @mesh ["dp"=4294967296, "tp"=4294967296]
