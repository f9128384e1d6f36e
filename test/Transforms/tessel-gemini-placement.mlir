// -tessel-gemini-chunks and -tessel-gemini-placement on an fsdp step (w
// [4, 3] in blocks [2, 3] over dp=2: 24 bytes; b [3] replicated: 12
// bytes). Chunks of 24 bytes: w alone (first read in the forward), then b.
// The arena of the step is 768 bytes; chunk 0 with Adam's moments holds 72
// bytes, chunk 1 36.
// RUN: tessel-opt %s --tessel-add-loss='kind=mse' --tessel-autodiff --tessel-optimizer --tessel-zero='stage=3' --tessel-propagate --tessel-partition --tessel-simplify-collectives --tessel-gather-at-use --tessel-gemini-chunks='chunk-bytes=24' --tessel-gemini-placement 2>/dev/null | FileCheck %s --check-prefix=NOLIMIT
// RUN: tessel-opt %s --tessel-add-loss='kind=mse' --tessel-autodiff --tessel-optimizer --tessel-zero='stage=3' --tessel-propagate --tessel-partition --tessel-simplify-collectives --tessel-gather-at-use --tessel-gemini-chunks --tessel-gemini-placement 2>/dev/null | FileCheck %s --check-prefix=ONE
// RUN: tessel-opt %s --tessel-add-loss='kind=mse' --tessel-autodiff --tessel-optimizer --tessel-zero='stage=3' --tessel-propagate --tessel-partition --tessel-simplify-collectives --tessel-gather-at-use --tessel-gemini-chunks='chunk-bytes=24' --tessel-gemini-placement='device-memory-limit=844' 2>/dev/null | FileCheck %s --check-prefix=MIXED
// RUN: tessel-opt %s --tessel-add-loss='kind=mse' --tessel-autodiff --tessel-optimizer --tessel-zero='stage=3' --tessel-propagate --tessel-partition --tessel-simplify-collectives --tessel-gather-at-use --tessel-gemini-chunks='chunk-bytes=24' --tessel-gemini-placement='device-memory-limit=784' 2>/dev/null | FileCheck %s --check-prefix=HOST
// RUN: not tessel-opt %s --tessel-add-loss='kind=mse' --tessel-autodiff --tessel-optimizer --tessel-zero='stage=3' --tessel-propagate --tessel-partition --tessel-simplify-collectives --tessel-gather-at-use --tessel-gemini-chunks='chunk-bytes=24' --tessel-gemini-placement='device-memory-limit=20' 2>&1 | FileCheck %s --check-prefix=CHUNK
// RUN: not tessel-opt %s --tessel-add-loss='kind=mse' --tessel-autodiff --tessel-optimizer --tessel-zero='stage=3' --tessel-propagate --tessel-partition --tessel-simplify-collectives --tessel-gather-at-use --tessel-gemini-chunks='chunk-bytes=24' --tessel-gemini-placement='device-memory-limit=764' 2>&1 | FileCheck %s --check-prefix=STEP
// The same through the compile pipeline (tesselc --plugin gemini).
// RUN: tessel-opt %s --tessel-compile-pipeline='train=true loss=mse zero-stage=3 gemini=true chunk-bytes=24 device-memory-limit=784' 2>/dev/null | FileCheck %s --check-prefix=HOST
// RUN: not tessel-opt %s --tessel-gemini-chunks='chunk-bytes=0' 2>&1 | FileCheck %s --check-prefix=BYTES
// RUN: not tessel-opt %s --tessel-gemini-placement='device-memory-limit=-1' 2>&1 | FileCheck %s --check-prefix=NEG

module {
  tessel.mesh @mesh ["dp"=2]
  func.func @main(%x: tensor<8x4xf32> {tessel.sharding = #tessel.sharding<@mesh, [{"dp"}, {}]>}) -> tensor<8x3xf32>
      attributes {tessel.input_names = ["x"], tessel.output_names = ["y"]} {
    %w = tessel.weight "w" : tensor<4x3xf32>
    %b = tessel.weight "b" : tensor<3xf32>
    %m = tessel.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
    %y = tessel.add %m, %b : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
    return %y : tensor<8x3xf32>
  }
}

// No limit: both chunks resident, nothing moves. A parameter's optimizer
// state is marked with its chunk.
// NOLIMIT: tessel.gemini = {arena = 768 : i64, limit = 0 : i64, peak = 876 : i64, placement = ["device", "device"], resident = 108 : i64}
// NOLIMIT-DAG: tessel.weight "w" {tessel.chunk = 0 : i64
// NOLIMIT-DAG: tessel.weight "b" {tessel.chunk = 1 : i64
// NOLIMIT-DAG: tessel.weight "exp_avg.w" zeros {tessel.chunk = 0 : i64
// NOLIMIT-DAG: tessel.weight "exp_avg_sq.b" zeros {tessel.chunk = 1 : i64
// NOLIMIT-NOT: chunk_fetch

// The default chunk (32 MiB) holds both.
// ONE-DAG: tessel.weight "w" {tessel.chunk = 0 : i64
// ONE-DAG: tessel.weight "b" {tessel.chunk = 0 : i64

// 844 bytes: chunk 0 resident (768 + 72), chunk 1 no longer fits (+ 36):
// b is fetched before the add that reads it, and updated in host memory.
// MIXED: placement = ["device", "host"]
// MIXED: %[[B:.*]] = tessel.weight "b"
// MIXED-NOT: chunk_fetch
// MIXED: %[[G:.*]] = tessel.all_gather %{{.*}} on @mesh
// MIXED-NEXT: %[[M:.*]] = tessel.matmul %{{.*}}, %[[G]]
// MIXED-NEXT: %[[F:.*]] = tessel.chunk_fetch %[[B]] {chunk = 1 : i64} : (tensor<3xf32>) -> tensor<3xf32>
// MIXED-NEXT: tessel.add %[[M]], %[[F]]
// MIXED: tessel.adam_update %[[B]],
// MIXED-NOT: chunk_fetch

// 784 bytes: both in host memory; b's fetch goes ahead, one chunk early
// (prefetch), the gather reads w's copy.
// HOST: placement = ["host", "host"]
// HOST: %[[W:.*]] = tessel.weight "w"
// HOST: %[[B:.*]] = tessel.weight "b"
// HOST: %[[FW:.*]] = tessel.chunk_fetch %[[W]] {chunk = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// HOST-NEXT: %[[FB:.*]] = tessel.chunk_fetch %[[B]] {chunk = 1 : i64}
// HOST-NEXT: %[[G:.*]] = tessel.all_gather %[[FW]] on @mesh
// HOST-NEXT: %[[M:.*]] = tessel.matmul %{{.*}}, %[[G]]
// HOST-NEXT: {{tessel.add|tessel.fused_elementwise}} %[[M]], %[[FB]]
// HOST-DAG: tessel.adam_update %[[B]],
// HOST-DAG: tessel.adam_update %[[W]],

// CHUNK: error: gemini: chunk 0 (1 parameter: 'w') holds 24 bytes on this rank, more than the device memory limit of 20 bytes (a chunk is fetched whole: give a larger limit or smaller chunks)
// STEP: error: gemini: with every chunk in host memory the step still needs 768 bytes of device memory (its arena), more than the device memory limit of 764 bytes: at tessel.adam_update 'adamw' (instruction 35) 768 bytes of activations and 0 bytes of fetched chunks (none) are live at once
// BYTES: error: tessel-gemini-chunks: chunk-bytes must be > 0 (got 0)
// NEG: error: tessel-gemini-placement: device-memory-limit must be >= 0 (got -1)
