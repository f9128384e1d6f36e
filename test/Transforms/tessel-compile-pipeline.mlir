// -tessel-compile-pipeline is tesselc's pipeline: on hand-annotated IR it
// gives what `tesselc --emit=partitioned` (and `--emit=propagated` with
// stop-after=propagate) prints for the same input, and with mesh= and plan=
// it annotates an imported module the way `tesselc --mesh --plan` does.

// RUN: tessel-opt %tessel_src/examples/gpt2_block_megatron.mlir --tessel-compile-pipeline > %t.opt.mlir
// RUN: tesselc %tessel_src/examples/gpt2_block_megatron.mlir --emit=partitioned -o %t.tesselc.mlir
// RUN: diff %t.opt.mlir %t.tesselc.mlir
// RUN: FileCheck %s --check-prefix=PART < %t.opt.mlir
// PART: tessel.all_reduce

// RUN: tessel-opt %tessel_src/examples/gpt2_block_megatron.mlir --tessel-compile-pipeline=stop-after=propagate > %t.prop.mlir
// RUN: tesselc %tessel_src/examples/gpt2_block_megatron.mlir --emit=propagated -o %t.prop-tesselc.mlir
// RUN: diff %t.prop.mlir %t.prop-tesselc.mlir

// RUN: tesselc %tessel_src/test/models/mlp/model.onnx --emit=mlir -o %t.mlp.mlir
// RUN: tessel-opt %t.mlp.mlir --tessel-compile-pipeline="mesh=dp=2,tp=2 plan=%tessel_src/examples/plans/mlp_tp.yaml" > %t.mlp-opt.mlir
// RUN: tesselc %tessel_src/test/models/mlp/model.onnx --mesh dp=2,tp=2 --plan %tessel_src/examples/plans/mlp_tp.yaml --emit=partitioned -o %t.mlp-tesselc.mlir
// RUN: diff %t.mlp-opt.mlir %t.mlp-tesselc.mlir
// RUN: FileCheck %s --check-prefix=MLP < %t.mlp-opt.mlir
// MLP: tessel.mesh @mesh ["dp"=2, "tp"=2]
// MLP: tessel.all_reduce

// RUN: not tessel-opt %tessel_src/examples/gpt2_block_megatron.mlir --tessel-compile-pipeline=stop-after=export 2>&1 | FileCheck %s --check-prefix=STOP
// STOP: error: stop-after='export' is none of import, autodiff, propagate, partition
// RUN: not tessel-opt %tessel_src/examples/gpt2_block_megatron.mlir --tessel-compile-pipeline=mesh=dp=2 2>&1 | FileCheck %s --check-prefix=MESH
// MESH: error: the module already has a mesh; mesh= and plan= apply to unannotated modules
// RUN: not tessel-opt %t.mlp.mlir --tessel-compile-pipeline=plan=%t.missing.yaml 2>&1 | FileCheck %s --check-prefix=PLAN
// PLAN: error: {{.*}}missing.yaml
