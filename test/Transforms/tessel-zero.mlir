// -tessel-zero: each optimizer update pinned to its parameter's layout with
// dp added on the first dim that divides (w [4, 3]: dim 0 over dp=2; b [3]:
// none, a warning and DDP's update). Then partitioned: the collectives of
// weight-update sharding, and -tessel-gather-at-use.
// RUN: tessel-opt %s --tessel-add-loss='kind=mse' --tessel-autodiff --tessel-optimizer --tessel-zero='stage=1' 2>&1 | FileCheck %s --check-prefix=S1
// RUN: tessel-opt %s --tessel-add-loss='kind=mse' --tessel-autodiff --tessel-optimizer --tessel-zero='stage=2' --tessel-propagate --tessel-partition --tessel-simplify-collectives --tessel-gather-at-use 2>/dev/null | FileCheck %s --check-prefix=S2
// RUN: tessel-opt %s --tessel-add-loss='kind=mse' --tessel-autodiff --tessel-optimizer --tessel-zero='stage=3' --tessel-propagate --tessel-partition --tessel-simplify-collectives --tessel-gather-at-use 2>/dev/null | FileCheck %s --check-prefix=S3
// RUN: tessel-opt %s --tessel-compile-pipeline='train=true loss=mse zero-stage=3 precision=bf16' 2>/dev/null | FileCheck %s --check-prefix=PIPE
// RUN: not tessel-opt %s --tessel-zero='stage=4' 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not tessel-opt %s --tessel-zero='axis=tp' 2>&1 | FileCheck %s --check-prefix=AXIS

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

// S1: warning: ZeRO: no dim of parameter 'b' [3] divides over dp=2
// S1-DAG: tessel.weight "exp_avg.w" zeros {tessel.sharding = #tessel.sharding<@mesh, [{"dp"}, {}]>}
// S1-DAG: tessel.weight "exp_avg_sq.w" zeros {tessel.sharding = #tessel.sharding<@mesh, [{"dp"}, {}]>}
// S1-DAG: %[[W:.*]] = tessel.weight "w" {tessel.sharding = #tessel.sharding<@mesh, [{}, {}]>}
// S1: %[[P:.*]] = tessel.shard_constraint %[[W]] <@mesh, [{"dp"}, {}]>
// S1-NEXT: %[[G:.*]] = tessel.shard_constraint %{{.*}} <@mesh, [{}, {}]>
// S1-NEXT: %[[GS:.*]] = tessel.shard_constraint %[[G]] <@mesh, [{"dp"}, {}]>
// S1-NEXT: tessel.adam_update %[[P]], %[[GS]], {{.*}}tessel.sharding = [#tessel.sharding<@mesh, [{"dp"}, {}]>, #tessel.sharding<@mesh, [{"dp"}, {}]>, #tessel.sharding<@mesh, [{"dp"}, {}]>]

// Stage 2: the gradient reduce-scattered, the block of w sliced right
// before the update, the new block gathered back into w.
// S2: %[[W:.*]] = tessel.weight "w" {tessel.global_sharding = #tessel.sharding<@mesh, [{}, {}]>} : tensor<4x3xf32>
// S2: %[[G:.*]] = tessel.reduce_scatter sum %{{.*}} on @mesh axes = ["dp"] dim = 0 : (tensor<4x3xf32>) -> tensor<2x3xf32>
// S2-NEXT: %[[P:.*]] = tessel.local_slice %[[W]] on @mesh axes = ["dp"] dim = 0 : (tensor<4x3xf32>) -> tensor<2x3xf32>
// S2-NEXT: %[[NEW:.*]], %{{.*}}, %{{.*}} = tessel.adam_update %[[P]], %[[G]]
// S2-NEXT: %[[FULL:.*]] = tessel.all_gather %[[NEW]] on @mesh axes = ["dp"] dim = 0 : (tensor<2x3xf32>) -> tensor<4x3xf32>
// S2-NEXT: tessel.assign %[[W]], %[[FULL]] : tensor<4x3xf32>

// Stage 3 (FSDP): w stored in blocks, gathered right before the matmul;
// the update on the block, assigned with no gather.
// S3: %[[W:.*]] = tessel.weight "w" {tessel.global_sharding = #tessel.sharding<@mesh, [{"dp"}, {}]>} : tensor<2x3xf32>
// S3: %[[FULL:.*]] = tessel.all_gather %[[W]] on @mesh axes = ["dp"] dim = 0 : (tensor<2x3xf32>) -> tensor<4x3xf32>
// S3-NEXT: tessel.matmul %{{.*}}, %[[FULL]]
// S3: %[[G:.*]] = tessel.reduce_scatter sum
// S3-NEXT: %[[NEW:.*]], %{{.*}}, %{{.*}} = tessel.adam_update %[[W]], %[[G]]
// S3-NEXT: tessel.assign %[[W]], %[[NEW]] : tensor<2x3xf32>

// The compile pipeline's options: FSDP and bf16 GEMMs (the gathered f32
// master cast to the GEMM's bf16).
// PIPE: tessel.all_gather %{{.*}} on @mesh axes = ["dp"] dim = 0 : (tensor<2x3xf32>) -> tensor<4x3xf32>
// PIPE-NEXT: tessel.cast %{{.*}} : tensor<4x3xf32> -> tensor<4x3xbf16>
// PIPE-NEXT: tessel.matmul {{.*}} -> tensor<4x3xbf16>
// PIPE: tessel.reduce_scatter sum

// BAD: error: tessel-zero: stage must be 1, 2 or 3 (got 4)
// AXIS: error: tessel-zero: the mesh has no axis 'tp' to shard the optimizer over
