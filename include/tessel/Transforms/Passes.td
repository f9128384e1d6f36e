//===- Passes.td - tessel transformation passes ------------*- tablegen -*-===//

#ifndef TESSEL_TRANSFORMS_PASSES_TD
#define TESSEL_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PrintShardingRulesPass : Pass<"tessel-print-sharding-rules"> {
  let summary = "Attaches each op's sharding rule as a printable attribute";
  let description = [{
    For every op that implements `ShardingRuleOpInterface`, sets the
    discardable attribute `tessel.rule` to the op's `#tessel.rule`, so that
    tests and users can read the rules propagation and partitioning use.
    Ops without a rule are left alone; with `warn-missing`, each gets a
    warning that it is a propagation barrier.

    Before:

    ```mlir
    %2 = tessel.matmul %0, %1 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
    ```

    After:

    ```mlir
    %2 = tessel.matmul %0, %1 {tessel.rule = #tessel.rule<([i, k], [k, j]) -> ([i, j]) {i=8, j=32, k=16} reduction={k}>} : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
    ```

    **Options**

    * `warn-missing`: warn on every op with tensor operands or results that
      declares no rule.
  }];
  let options = [
    Option<"warnMissing", "warn-missing", "bool", /*default=*/"false",
           "Warn on ops that declare no sharding rule">,
  ];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def PropagatePass : Pass<"tessel-propagate", "::mlir::ModuleOp"> {
  let summary = "Propagates sharding specs to every value through op rules";
  let description = [{
    From the specs a user gave — function arguments and results, the
    `tessel.sharding` of ops such as `tessel.weight`, and
    `tessel.shard_constraint` — to every value, forward and backward through
    every op by its `#tessel.rule`, to a fixed point. Known dim shardings are
    projected onto the rule's factors (a compound dim gives its axes to its
    major factors first), each factor picks its axes, and the factors are
    projected back onto every open dim. `need_replication` factors never
    carry axes; a sharded `reduction` factor makes the results `partial`.
    User specs are never changed; where candidates conflict, the one that
    reshards fewer bytes wins and a remark says so. An op without a rule is a
    barrier (warning). A value whose dim another user needs replicated does
    not pass that dim's split on: the gathered copy serves every user.
    Afterwards every op result and function argument and result carries
    `tessel.sharding`; dims nobody split are replicated. The module's specs
    must name one mesh.

    Before (mesh `["tp"=4]`):

    ```mlir
    %w = tessel.weight "w" {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}] # "}]" # [{>} : tensor<64x256xf32>
    %y = tessel.matmul %x, %w : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
    %z = tessel.gelu %y : tensor<8x256xf32>
    ```

    After:

    ```mlir
    %y = tessel.matmul %x, %w {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}] # "}]" # [{>} : ...
    %z = tessel.gelu %y {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}] # "}]" # [{>} : tensor<8x256xf32>
    ```

    **Options**

    * `split-fused`: first move every `tessel.split` of a dim the plan
      splits up to the weights it comes from (GPT-2's fused q, k, v
      projection becomes three column-parallel projections over weight
      slices marked `tessel.source_slice`), so that each rank keeps its heads of q,
      k and v together as Megatron does.
  }];
  let options = [
    Option<"splitFused", "split-fused", "bool", /*default=*/"true",
           "Split fused projections whose output a split divides">,
  ];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def PartitionPass : Pass<"tessel-partition", "::mlir::ModuleOp"> {
  let summary = "Rewrites a fully annotated program into its per-rank program";
  let description = [{
    SPMD partitioning of the output of `-tessel-propagate`: global shapes
    become local shapes (a split dim is divided by its shard count, a padded
    dim is (size + pad) / shards) and communication is inserted where a value
    is used in a sharding other than its own: a pending partial becomes
    `tessel.all_reduce`, or `tessel.reduce_scatter` when the use wants a dim
    split over the partial axis; a split that must go becomes
    `tessel.all_gather`, a split that moves between dims
    `tessel.all_to_all`, and a split that must appear a `tessel.local_slice`.
    Each resharding of a value is made once, right after its definition, and
    shared by its uses. Each op computes in the sharding its rule gives from
    its results' specs (a sharded reduction factor leaves its result partial).
    A reduction over a padded dim is refused with an error naming the value,
    dim, size and axes. `tessel.sharding` annotations are removed; weights and
    function arguments and results keep their global spec as the discardable
    attribute `global_sharding` for the exporter.

    Before (mesh `["tp"=4]`):

    ```mlir
    %w = tessel.weight "w" {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}, {}] # "}]" # [{>} : tensor<64x32xf32>
    %y = tessel.matmul %x, %w {tessel.sharding = #tessel.sharding<@mesh, [{}, {}] # "}]" # [{, partial = [sum("tp")]>} : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
    return %y : tensor<8x32xf32>   // the result is replicated
    ```

    After:

    ```mlir
    %w = tessel.weight "w" {global_sharding = #tessel.sharding<@mesh, [{"tp"}, {}] # "}]" # [{>} : tensor<16x32xf32>
    %y = tessel.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
    %r = tessel.all_reduce sum %y on @mesh axes = ["tp"] : tensor<8x32xf32>
    return %r : tensor<8x32xf32>
    ```
  }];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def SimplifyCollectivesPass : Pass<"tessel-simplify-collectives"> {
  let summary = "Folds and fuses the collectives of a partitioned program";
  let description = [{
    Peephole rewrites over the communication partitioning inserted, each a
    strict saving in bytes moved:

    1. `all_reduce` whose only use is a `local_slice` of a dim over the same
       axes becomes one `reduce_scatter` of that dim (a reduce-scatter moves
       1/n of an all-reduce's data per rank).
    2. `local_slice` of an `all_gather` of the same dim over the same axes is
       the gathered value itself: both go (a no-op reshard).
    3. `all_gather` of a `local_slice` of the same dim over the same axes is
       the sliced (replicated) value itself: both go.
    4. `all_reduce` of an `all_reduce` of the same kind, the inner one used
       only there, becomes one `all_reduce` over both axis sets.
    5. A collective (or local slice) over axes whose sizes multiply to 1 is
       its operand.

    Option `reduce-scatter=false` leaves rewrite 1 out (ZeRO stage 1 keeps
    the gradients' all_reduces, which `-tessel-bucket-gradients` buckets).

    Before (mesh `["tp"=4]`):

    ```mlir
    %r = tessel.all_reduce sum %y on @mesh axes = ["tp"] : tensor<8x32xf32>
    %s = tessel.local_slice %r on @mesh axes = ["tp"] dim = 0 : (tensor<8x32xf32>) -> tensor<2x32xf32>
    ```

    After:

    ```mlir
    %s = tessel.reduce_scatter sum %y on @mesh axes = ["tp"] dim = 0 : (tensor<8x32xf32>) -> tensor<2x32xf32>
    ```
  }];
  let options = [
    Option<"reduceScatter", "reduce-scatter", "bool", /*default=*/"true",
           "Fuse an all_reduce and a local_slice into a reduce_scatter">,
  ];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def SplitBiasPass : Pass<"tessel-split-bias"> {
  let summary = "Separates the bias of gemm and conv2d into an add";
  let description = [{
    `gemm(a, b, c)` becomes `add(gemm(a, b), beta * c)` and
    `conv2d(x, w, bias)` becomes `add(conv2d(x, w), reshape(bias))`. A sharded
    contraction leaves the product partial; a bias fused into it would be
    added once per rank. Split off, the bias is added once, after the
    reduction (as Megatron's row-parallel linear does). tesselc runs it
    before propagation whenever the program has a mesh.

    ```mlir
    %y = tessel.gemm %x, %w, %b {trans_b} : (tensor<8x64xf32>, tensor<10x64xf32>, tensor<10xf32>) -> tensor<8x10xf32>
    // becomes
    %p = tessel.gemm %x, %w {trans_b} : (tensor<8x64xf32>, tensor<10x64xf32>) -> tensor<8x10xf32>
    %y = tessel.add %p, %b : (tensor<8x10xf32>, tensor<10xf32>) -> tensor<8x10xf32>
    ```
  }];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def FoldMergedTransposePass : Pass<"tessel-fold-merged-transpose"> {
  let summary = "Folds a transpose between a merge of leading dims and its split";
  let description = [{
    PyTorch's default exporter transposes attention's keys through a merge
    of batch and heads: `reshape [b, h, s, d] -> [b*h, s, d]`, `transpose
    [0, 2, 1]`, `reshape -> [b, h, d, s]`. A shard is a contiguous block of
    a dim, so heads split over tp cannot stay split in `[b*h]` with the batch
    whole, and the keys would be gathered to be transposed on every rank.
    This pass rewrites each `reshape` (merging leading dims), `transpose`
    (swapping the last two dims, read once), `reshape` (splitting leading
    dims) into one transpose of the last two dims of the first reshape's
    operand, then a reshape to the last one's type where the shapes differ:
    every element keeps its place, and the heads stay split. Ops left
    unread are erased. tesselc runs it after import.

    ```mlir
    %y = tessel.reshape %x : (tensor<2x4x16x8xf32>) -> tensor<8x16x8xf32>
    %z = tessel.transpose %y perm = [0, 2, 1] : (tensor<8x16x8xf32>) -> tensor<8x8x16xf32>
    %w = tessel.reshape %z : (tensor<8x8x16xf32>) -> tensor<2x4x8x16xf32>
    // becomes
    %w = tessel.transpose %x perm = [0, 1, 3, 2] : (tensor<2x4x16x8xf32>) -> tensor<2x4x8x16xf32>
    ```
  }];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def FuseGeluPass : Pass<"tessel-fuse-gelu"> {
  let summary = "Folds decomposed GELU subgraphs into tessel.gelu";
  let description = [{
    Exporters without an ONNX Gelu op (opsets below 20, PyTorch's default)
    write GELU as 8-9 elementwise ops. This pass recognises the tanh form
    `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))` and the erf form
    `0.5 * x * (1 + erf(x / sqrt(2)))`, in any association of the outer
    products, with `x^3` as products or `pow(x, 3)` and the erf argument as a
    division or a product (constants within a relative 1e-5), and replaces
    each by one `tessel.gelu` (`{tanh_approximation}` for the tanh form): one
    pass over the activations instead of eight. Ops of the decomposition that
    nothing else reads are erased. tesselc runs it after import.

    ```mlir
    %x2 = tessel.mul %x, %x : tensor<4x8xf32>
    ...
    %y = tessel.mul %half, %m : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    // becomes
    %y = tessel.gelu %x {tanh_approximation} : tensor<4x8xf32>
    ```
  }];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def FuseAttentionPass : Pass<"tessel-fuse-attention"> {
  let summary = "Folds exported scaled dot-product attention into tessel.attention";
  let description = [{
    PyTorch's exporters write `scaled_dot_product_attention` (and the
    eager attention of transformers' models) as a product of the queries
    with the transposed keys (both scaled by sqrt(scale) beforehand, or the
    product scaled by a constant after), an additive mask (causal or
    padding, broadcast), a softmax over the keys, the default exporter's
    NaN guard `where(isnan(p), fill, p)` (written `p != p`), and a product
    with the values. Where every intermediate is read only by the next,
    this pass replaces the chain by one `tessel.attention`: its kernels keep
    no [S, T] scores beyond a block of rows per thread, its sharding rule
    keeps the heads split over tp, and its gradient recomputes the scores
    (FlashAttention-2's backward). tesselc runs it after import
    (docs/fusion.md).

    ```mlir
    %s = tessel.matmul %q, %kt : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x16x16xf32>
    %a = tessel.add %s, %mask : (tensor<2x4x16x16xf32>, tensor<1x1x16x16xf32>) -> tensor<2x4x16x16xf32>
    %p = tessel.softmax %a axis = 3 : tensor<2x4x16x16xf32>
    %o = tessel.matmul %p, %v : (tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32>
    // becomes
    %o, %lse = tessel.attention %q, %kt, %v mask %mask : (...) -> (tensor<2x4x16x8xf32>, tensor<2x4x16xf32>)
    ```
  }];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def FoldTransposeIntoGemmPass : Pass<"tessel-fold-transpose-into-gemm"> {
  let summary = "Reads a 2-D transposed right operand of a matmul in place (gemm trans_b)";
  let description = [{
    A tied language-model head reads the token embedding transposed:
    `matmul(x, transpose(W, [1, 0]))` copies the whole table every step
    before the product. This pass rewrites each matmul whose right operand
    is such a transpose of a 2-D value into a `tessel.gemm` with `trans_b`
    reading W as it is stored, the left operand's leading dims merged into
    its rows (and split back after): the same products, no copy. So does
    the head's backward: a gemm reading a 2-D transpose flips that
    operand's `trans_a`/`trans_b`, and a 2-D transpose of a gemm without
    `c` (its only reader) becomes the gemm of the operands swapped, both
    flags flipped ((op(a) op(b))^T = op(b)^T op(a)^T). A transpose nothing
    else reads is erased. tesselc runs it on the final program, after
    partitioning.

    ```mlir
    %t = tessel.transpose %w perm = [1, 0] : (tensor<100x16xf32>) -> tensor<16x100xf32>
    %y = tessel.matmul %x, %t : (tensor<2x8x16xf32>, tensor<16x100xf32>) -> tensor<2x8x100xf32>
    // becomes
    %a = tessel.reshape %x : (tensor<2x8x16xf32>) -> tensor<16x16xf32>
    %p = tessel.gemm %a, %w {trans_b} : (tensor<16x16xf32>, tensor<100x16xf32>) -> tensor<16x100xf32>
    %y = tessel.reshape %p : (tensor<16x100xf32>) -> tensor<2x8x100xf32>
    ```
  }];
}

def FuseElementwisePass : Pass<"tessel-fuse-elementwise"> {
  let summary = "Folds trees of f32 elementwise ops into tessel.fused_elementwise";
  let description = [{
    Last in the compile, on the program the artifact holds: each tree of
    unary and binary elementwise ops on f32 (bias adds, GELU and SiLU,
    residual adds, scales, their gradients) whose inner values have one
    reader each and the root's shape becomes one
    `tessel.fused_elementwise`: its kernel reads each input once and writes
    the result once, where the unfused ops wrote and re-read every
    intermediate. An input is the result's shape, one element, or the
    result's trailing dims. An op joins its reader's tree only when no op
    between them may write memory (an assign, an optimizer update, a
    collective), and only ops without attributes (gelu's form aside) join.
    The result is bit for bit the unfused ops' (docs/fusion.md).

    ```mlir
    %s = tessel.sigmoid %g : tensor<2x64xf32>
    %m = tessel.mul %g, %s : (tensor<2x64xf32>, tensor<2x64xf32>) -> tensor<2x64xf32>
    %y = tessel.mul %m, %u : (tensor<2x64xf32>, tensor<2x64xf32>) -> tensor<2x64xf32>
    // becomes
    %y = tessel.fused_elementwise %g, %u {args = array<i64: 0, -1, 0, 0, 2, 0, 3, 1, 0>, ops = ["sigmoid", "mul", "mul"]} : (tensor<2x64xf32>, tensor<2x64xf32>) -> tensor<2x64xf32>
    ```
  }];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def FuseLayerNormPass : Pass<"tessel-fuse-layer-norm"> {
  let summary = "Folds decomposed layer norms into tessel.layer_norm";
  let description = [{
    ONNX has LayerNormalization only from opset 17; PyTorch's exporter at
    lower opsets writes each `nn.LayerNorm` as `d = x - mean(x)`,
    `d / sqrt(mean(d^2) + eps) * scale + bias` (ReduceMean, Sub, Pow,
    ReduceMean, Add, Sqrt, Div, Mul, Add). This pass recognises that form
    (the means over the same trailing dims with `keep_dims`, `d^2` as
    `pow(d, 2)` or `d * d`, the division or a product with `rsqrt`, the
    products and sums in either operand order, the bias optional, the scale
    and bias of the normalised dims' shape) and replaces it by one
    `tessel.layer_norm`, so that propagation applies the norm's rule and a
    plan reaches the same collectives on every export. Ops of the
    decomposition that nothing else reads are erased. tesselc runs it after
    import.

    ```mlir
    %m = tessel.reduce_mean %x dims = [1] keep_dims : (tensor<4x8xf32>) -> tensor<4x1xf32>
    %d = tessel.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
    ...
    %y = tessel.add %s, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    // becomes
    %y = tessel.layer_norm %x, %g, %b axis = 1 {epsilon = 9.99999974E-6 : f32} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def CompilePipelinePass : Pass<"tessel-compile-pipeline", "::mlir::ModuleOp"> {
  let summary = "The compile pipeline of tesselc, from annotated IR to SPMD";
  let description = [{
    What `tesselc` runs between import and export, so that IR annotated by
    hand (or imported with `tesselc --emit=mlir`) goes through the same
    pipeline in `tessel-opt`:

    1. with `mesh` or `plan`: the plan's annotations (`tesselc --mesh
       --plan`: the mesh, then the specs its rules give; the module must not
       have a mesh yet);
    2. `-tessel-fuse-gelu`, `-tessel-fuse-layer-norm`;
    3. when the module has a mesh: `-tessel-split-bias`,
       `-tessel-propagate`, and unless `stop-after=propagate`,
       `-tessel-partition` and `-tessel-simplify-collectives`.

    ```
    tessel-opt annotated.mlir --tessel-compile-pipeline
    tessel-opt model.mlir --tessel-compile-pipeline='mesh=dp=2,tp=2 plan=plan.yaml'
    ```

    The result equals `tesselc --emit=partitioned` (`--emit=propagated` with
    `stop-after=propagate`) on the same input.

    **Options**

    * `mesh`: a device mesh, e.g. `dp=2,tp=2` (overrides the plan's).
    * `plan`: a plan file (YAML/JSON) or the built-in `dp` or `megatron`.
    * `stop-after`: `import` (annotations only), `autodiff` (with `train`:
      the loss and its gradients), `propagate`, or `partition` (the
      default).
    * `train`: compile the training step (docs/training.md):
      `-tessel-add-loss{kind=loss output=loss-output}`, `-tessel-autodiff`
      and `-tessel-optimizer{kind=optimizer lr weight-decay momentum}` after
      `-tessel-fuse-gelu`, before the sharding passes.
    * `zero-stage`, `precision`, `loss-scale` (with `train`):
      `-tessel-zero{stage}` (docs/plugins.md), `-tessel-mixed-precision`
      and dynamic loss scaling (docs/training.md).
    * `gemini`, `chunk-bytes`, `device-memory-limit` (with `train` and
      `zero-stage=3`): `-tessel-gemini-chunks{chunk-bytes}` and
      `-tessel-gemini-placement{device-memory-limit}` at the end
      (tesselc --plugin gemini).
  }];
  let options = [
    Option<"mesh", "mesh", "std::string", /*default=*/"\"\"",
           "Device mesh, e.g. dp=2,tp=2">,
    Option<"plan", "plan", "std::string", /*default=*/"\"\"",
           "Sharding plan: a YAML/JSON file or the built-in 'dp' or 'megatron'">,
    Option<"stopAfter", "stop-after", "std::string", /*default=*/"\"partition\"",
           "import | autodiff | propagate | partition">,
    Option<"train", "train", "bool", /*default=*/"false",
           "Compile the training step: loss, autodiff, optimizer">,
    Option<"loss", "loss", "std::string", /*default=*/"\"cross_entropy\"",
           "With train: cross_entropy | mse">,
    Option<"lossOutput", "loss-output", "std::string", /*default=*/"\"\"",
           "With train: the output the loss is computed on">,
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"adamw\"",
           "With train: sgd | adam | adamw">,
    Option<"lr", "lr", "double", /*default=*/"1e-3", "With train: learning rate">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.0",
           "With train: weight decay">,
    Option<"momentum", "momentum", "double", /*default=*/"0.0",
           "With train: SGD momentum">,
    Option<"recompute", "recompute", "bool", /*default=*/"false",
           "With train: recompute each layer's forward in the backward">,
    Option<"bucketMb", "bucket-mb", "double", /*default=*/"25.0",
           "With train and a mesh: gradient bucket cap in MiB (0: none)">,
    Option<"zeroStage", "zero-stage", "int64_t", /*default=*/"0",
           "With train and a mesh: -tessel-zero's stage (1, 2, 3; 0: none; "
           "tesselc --plugin zero1|zero2|fsdp)">,
    Option<"fsdpPrefetch", "fsdp-prefetch", "int64_t", /*default=*/"0",
           "With zero-stage 3: parameter gathers issued ahead of their use "
           "(-tessel-gather-at-use's prefetch; 0: synchronous)">,
    Option<"precision", "precision", "std::string", /*default=*/"\"\"",
           "With train: -tessel-mixed-precision's bf16 | fp16 (\"\": f32)">,
    Option<"lossScale", "loss-scale", "double", /*default=*/"0.0",
           "With train: dynamic loss scaling's initial scale (0: none)">,
    Option<"gemini", "gemini", "bool", /*default=*/"false",
           "With train and a mesh: Gemini's chunks and their placement "
           "(tesselc --plugin gemini)">,
    Option<"chunkBytes", "chunk-bytes", "int64_t", /*default=*/"32 << 20",
           "With gemini: a chunk's capacity in bytes">,
    Option<"deviceMemoryLimit", "device-memory-limit", "int64_t",
           /*default=*/"0", "With gemini: device memory per rank in bytes "
           "(0: no limit)">,
  ];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def ClassifyParametersPass : Pass<"tessel-classify-parameters", "::mlir::ModuleOp"> {
  let summary = "Decides which weights train: the model's parameters, not "
                "its constants";
  let description = [{
    Runs after `-tessel-add-loss`, before `-tessel-autodiff`. Every float
    `tessel.weight` of the loss function is classed trainable or frozen, with
    the reason, and the trainable names are written to the module attribute
    `tessel.trainable` (which `-tessel-autodiff` differentiates, and nothing
    else); the module attribute `tessel.parameter_classes` keeps, for each
    weight, `[trainable (bool), reason (string)]` for `--report`.

    In order, the first rule that speaks decides:

    1. a `frozen` pattern matches the name: frozen;
    2. `trainable` patterns were given: trainable if one matches, else frozen;
    3. the loss does not depend on it through a differentiable operand, it
       is a scalar, or it is a BatchNorm running statistic: frozen (PyTorch
       gives such a tensor no gradient, and its optimizers skip it);
    4. what the importer learnt of it (module attribute
       `tessel.weight_origins`, name -> `[kind, detail]`): `parameter`
       trains; `buffer` and `constant` (a buffer or a constant the exporter
       folded, or a Constant node) are frozen;
    5. otherwise (an initializer the exporter said nothing about) it trains,
       with a warning when its name looks like a folded value rather than a
       parameter.

    Patterns are globs over weight names (`*`, `?`), as plans match.
    A pattern that matches no weight, a `trainable` pattern that matches a
    non-float tensor, and a loss with nothing left to train are errors.

    ```mlir
    module attributes {tessel.weight_origins = {
        "fc.weight" = ["parameter", "torch.export PARAMETER"],
        "mask" = ["constant", "folded from: arange, triu"]}} {
      ...
    }
    // becomes
    module attributes {tessel.trainable = ["fc.weight"],
        tessel.parameter_classes = {
          "fc.weight" = [true, "parameter (torch.export PARAMETER)"],
          "mask" = [false, "constant (folded from: arange, triu)"]}, ...}
    ```

    **Options**

    * `trainable`: glob patterns; when given, exactly the matching weights
      train (ONNX Runtime Training's `requires_grad`).
    * `frozen`: glob patterns of weights that never train
      (`frozen_params`).
  }];
  let options = [
    ListOption<"trainable", "trainable", "std::string",
               "Globs: exactly these weights train">,
    ListOption<"frozen", "frozen", "std::string",
               "Globs: these weights never train">,
  ];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def AddLossPass : Pass<"tessel-add-loss", "::mlir::ModuleOp"> {
  let summary = "Appends the training loss to the forward function";
  let description = [{
    The loss is part of the compiled program (docs/training.md), built from
    ordinary tessel ops so that it shards and differentiates like the model.
    On every public function: the output named `output` (or the only one)
    becomes the argument of

    * `cross_entropy`: a new i64 argument `labels`, the output's shape minus
      its last dim; the mean over all positions of `-log_softmax(output)`
      at the label, positions whose label is -100 (PyTorch's
      `ignore_index`) left out of the sum and of the count;
    * `mse`: a new argument `targets` of the output's type; the mean of the
      squared differences.

    The function then returns the loss alone (`tensor<f32>`), named `loss`.

    **Options**

    * `kind`: `cross_entropy` (default) or `mse`.
    * `output`: the output the loss is computed on, by name, when the
      function has several.
  }];
  let options = [
    Option<"kind", "kind", "std::string", /*default=*/"\"cross_entropy\"",
           "cross_entropy | mse">,
    Option<"output", "output", "std::string", /*default=*/"\"\"",
           "The output the loss is computed on (by name)">,
  ];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def MicrobatchPass : Pass<"tessel-microbatch", "::mlir::ModuleOp"> {
  let summary = "Splits a loss function's batch into microbatches";
  let description = [{
    Gradient accumulation as a program transformation, between
    `-tessel-add-loss` and `-tessel-autodiff` (docs/training.md). On every
    public function that returns its loss alone, each argument (the data
    inputs, labels, targets) is sliced along dim 0 into `count` equal
    microbatches; the ops that depend on the arguments are copied once per
    microbatch, with the batch dim divided in their types; weights and
    constants are shared. The function returns the mean of the microbatch
    losses, so `-tessel-autodiff` sums each weight's gradient over the
    microbatches: PyTorch's accumulation loop (`loss / K` per microbatch,
    `backward`, one optimizer step).

    **Options**

    * `count`: the number of microbatches (default 1: nothing changes).
    * `concat-outputs`: an inference step (a pipeline's forward only): the
      function may return any tensors; each one that depends on an argument
      is the concatenation of its microbatch copies along its batch dim
      (an output whose batch was reduced away, or merged inside another
      dim, is an error naming it).
    * `copies`: emit only the first N of the `count` copies (0: all), each
      of `1/count` of the batch. Not a step: `--plan=auto` predicts a
      pipeline of many microbatches from three copies (the first, one in
      the middle, the last) and expands the rest in the prediction
      (tessel/Predict/ExpandPipeline.h).
  }];
  let options = [
    Option<"count", "count", "int64_t", /*default=*/"1",
           "Microbatches per step">,
    Option<"copies", "copies", "int64_t", /*default=*/"0",
           "Emit only the first N copies (0: all; for a prediction)">,
    Option<"concatOutputs", "concat-outputs", "bool", /*default=*/"false",
           "Concatenate each output over the microbatches (inference) "
           "instead of averaging the loss">,
  ];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def BatchNormTrainPass : Pass<"tessel-batch-norm-train", "::mlir::ModuleOp"> {
  let summary = "Lowers training-mode BatchNorm: batch statistics and running statistics";
  let description = [{
    Each `tessel.batch_norm_train` (ONNX BatchNormalization with
    `training_mode=1`) becomes ordinary ops: the batch's mean and biased
    variance per channel (`reduce_mean` over every dim but 1, then
    `tessel.batch_norm_variance`: PyTorch's two passes) and an inference
    `tessel.batch_norm` with them, marked `batch_stats`,
    so autodiff gives the input the gradient through the statistics too
    (in two fused passes: the op's gradient rule), and, with the batch
    sharded over dp, the statistics are partial sums that propagation
    all-reduces (SyncBN).
    With `update-running-stats`, the running mean and variance weights are
    assigned PyTorch's update, `(1 - m) running + m batch` with
    `m = 1 - momentum` (ONNX's momentum) and the unbiased variance, applied
    once per op in program order (one per microbatch), which makes them state
    of the training step (saved in checkpoints) and not parameters.
    Runs after `-tessel-microbatch` and before `-tessel-autodiff`
    (docs/training.md); a running statistic that is not a `tessel.weight`
    is an error when it is to be updated.

    **Options**

    * `update-running-stats`: assign the running statistics (default true;
      tesselc passes false when it compiles for inference).
  }];
  let options = [
    Option<"updateRunningStats", "update-running-stats", "bool",
           /*default=*/"true", "Assign the running mean and variance">,
  ];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def OptimizerPass : Pass<"tessel-optimizer", "::mlir::ModuleOp"> {
  let summary = "Turns (parameter, gradient) pairs into the optimizer's update";
  let description = [{
    On a function that `-tessel-autodiff` gave its gradients (the attribute
    `tessel.gradients`: after the loss, one result per parameter), builds
    PyTorch's update of each parameter (`torch.optim.SGD`, `Adam`, `AdamW`:
    same order of operations) with ordinary tessel ops and `tessel.assign`s:
    the parameter's new value, and its optimizer state, zero-initialised
    weights `momentum_buffer.P`, `exp_avg.P`, `exp_avg_sq.P` and the step
    count `optimizer.step`, which take the parameter's spec. The function
    then returns the loss alone.

    **Options**

    * `kind`: `sgd`, `adam` or `adamw` (default).
    * `lr`, `beta1`, `beta2`, `eps`, `weight-decay`, `momentum`, `nesterov`:
      as PyTorch's (defaults 1e-3, 0.9, 0.999, 1e-8, 0, 0, false).
    * `lr-schedule`: `constant` (default), `linear-warmup` (LambdaLR's
      factor k / warmup-steps for the k-th update, k = 0, 1, ..., then 1) or
      `cosine` (the same warmup, then 0.5 (1 + cos(pi p)) with p the
      fraction of the `total-steps - warmup-steps` steps after warmup, as
      transformers' `get_cosine_schedule_with_warmup`; 0 from `total-steps`
      on). Computed in-graph from the step count `optimizer.step`, which SGD
      then keeps too.
    * `warmup-steps`, `total-steps`: the schedule's lengths.
    * `clip-grad-norm`: when above 0, `torch.nn.utils.clip_grad_norm_`
      before the update: every gradient scaled by
      `min(1, reciprocal(norm + 1e-6) max)`, `norm` the L2 norm of the
      gradients' norms. The function then also returns `norm` (output
      `grad_norm`).
    * `grad-norm`: return `norm` as output `grad_norm` without clipping
      (what `torch.nn.utils.get_total_norm` gives).
  }];
  let options = [
    Option<"kind", "kind", "std::string", /*default=*/"\"adamw\"",
           "sgd | adam | adamw">,
    Option<"lr", "lr", "double", /*default=*/"1e-3", "Learning rate">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "Adam's beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "Adam's beta2">,
    Option<"eps", "eps", "double", /*default=*/"1e-8", "Adam's epsilon">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.0",
           "Weight decay (decoupled for adamw)">,
    Option<"momentum", "momentum", "double", /*default=*/"0.0",
           "SGD momentum">,
    Option<"nesterov", "nesterov", "bool", /*default=*/"false",
           "SGD with Nesterov momentum">,
    Option<"lrSchedule", "lr-schedule", "std::string",
           /*default=*/"\"constant\"",
           "constant | linear-warmup | cosine">,
    Option<"warmupSteps", "warmup-steps", "int64_t", /*default=*/"0",
           "Steps of linear warmup from 0">,
    Option<"totalSteps", "total-steps", "int64_t", /*default=*/"0",
           "Steps of the cosine schedule, warmup included">,
    Option<"lossScale", "loss-scale", "double", /*default=*/"0.0",
           "Dynamic loss scaling (GradScaler) with this initial scale: the "
           "gradients are unscaled, a step with a non-finite one is skipped "
           "and halves the scale; 0: none">,
    Option<"growthInterval", "growth-interval", "int64_t", /*default=*/"2000",
           "Loss scaling: the scale doubles after this many steps without "
           "overflow">,
    Option<"clipGradNorm", "clip-grad-norm", "double", /*default=*/"0.0",
           "Clip the gradients' total L2 norm to this (0: off)">,
    Option<"gradNorm", "grad-norm", "bool", /*default=*/"false",
           "Return the gradients' total L2 norm as `grad_norm` without "
           "clipping (clip-grad-norm returns it anyway)">,
  ];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def AutodiffPass : Pass<"tessel-autodiff", "::mlir::ModuleOp"> {
  let summary = "Appends the gradients of a function's loss (reverse mode)";
  let description = [{
    On every public function whose last result is a scalar float (the
    loss), appends the gradient of the loss with respect to each
    differentiated value as a new result, and names them in the function
    attribute `tessel.gradients`, in result order. Reverse mode over the
    function: the values that depend on a differentiated value (forward) and
    reach the loss (backward) get gradients, from `d loss = 1`, through each
    op's gradient rule (`GradientOpInterface`), summed with `tessel.add`
    where a value has several uses. A differentiated value the loss does not
    depend on gets zeros. An op on a path without a gradient rule is an
    error naming the op, its ONNX node and the operand. The backward program
    is ordinary tessel IR: it shards, partitions and runs like the forward.

    ```mlir
    func.func @main(%x: tensor<4x8xf32>) -> tensor<f32> {
      %w = tessel.weight "fc.weight" : tensor<8x2xf32>
      %y = tessel.matmul %x, %w : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
      %l = tessel.reduce_sum %y dims = [0, 1] : (tensor<4x2xf32>) -> tensor<f32>
      return %l : tensor<f32>
    }
    // becomes
    func.func @main(%x: tensor<4x8xf32>) -> (tensor<f32>, tensor<8x2xf32>)
        attributes {tessel.gradients = ["fc.weight"]} {
      ...
      %g = tessel.gemm %x, %dy {trans_a} : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
      return %l, %g : tensor<f32>, tensor<8x2xf32>
    }
    ```

    Where the function names its outputs (`tessel.output_names`), each
    gradient's output is named `<name>.grad`, `<name>` the weight's name or
    the argument's input name.

    **Options**

    * `wrt`: `weights` (the default): every float `tessel.weight`, one
      gradient per distinct weight name (a weight read at several places
      sums); `args`: every float function argument, named `arg<i>`.
  }];
  let options = [
    Option<"lossScale", "loss-scale", "double", /*default=*/"0.0",
           "Dynamic loss scaling (GradScaler): the seed d loss is this "
           "initial scale times 2^grad_scaler.log2_scale (a state); 0: 1">,
    Option<"wrt", "wrt", "std::string", /*default=*/"\"weights\"",
           "What to differentiate: weights | args">,
  ];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def GradHandlerPass : Pass<"tessel-grad-handler", "::mlir::ModuleOp"> {
  let summary = "Replaces the gradient all_reduces with a gradient handler's reduction";
  let description = [{
    Colossal-AI's gradient handler, as a pass over a partitioned training
    step: each `all_reduce` (sum) whose result feeds only the update (no
    other collective, not the function's results: the data-parallel
    gradient reduction, as `-tessel-bucket-gradients` finds it) is replaced
    by what the gradient handler `handler` builds from the rank's partial
    gradient (include/tessel/Extension/GradientHandler.h); the handler's
    `reduce` is the replaced `all_reduce`. Handlers are registered by name,
    the built-in `ddp` (the plain all_reduce) like a plugin's. Runs before
    `-tessel-bucket-gradients`, which buckets the all_reduces the handler
    leaves.

    **Options**

    * `handler`: the handler's name (`ddp`: unchanged).
  }];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
  let options = [
    Option<"handler", "handler", "std::string", /*default=*/"\"ddp\"",
           "The gradient handler">,
  ];
}

def BucketGradientsPass : Pass<"tessel-bucket-gradients", "::mlir::ModuleOp"> {
  let summary = "Fuses the gradient all_reduces of a partitioned program into buckets (DDP)";
  let description = [{
    On a partitioned training step, the `all_reduce`s whose results feed only
    the update (no other collective, not the function's results: with the
    batch over dp, the weight gradients' all-reduce) are fused, in program
    order (the backward's: the last layer's gradients first), into buckets
    of at most `bucket-mb` MiB, as PyTorch's DDP: each bucket's gradients
    are flattened (`reshape`) and concatenated into one buffer, right after
    the last of them is computed; one `all_reduce` of the buffer, marked
    `tessel.bucket = <index>`, is issued there; each gradient is sliced back
    out of the result right before its first use. The runtime runs a marked
    `all_reduce` asynchronously (a communication thread on the CPU) and
    waits for it before the first use of its result (the exporter writes a
    `wait` instruction there), so the all-reduce of a bucket overlaps the
    rest of the backward.

    What only a gradient all_reduce's result feeds (the fused optimizer
    update `-tessel-optimizer` puts right after the gradient, and its
    assigns) first moves to the end of the block; with ZeRO stage 1 the
    update's block of its parameter (a `local_slice` of the weight) and the
    `all_gather` of its result move along, so no parameter's block is alive
    from the backward to the end of the step. A gradient still read
    before the last of these all_reduces (a value all-reduced in the middle
    of its gradient's computation) is a bucket of its own, so that it does not make
    a large bucket wait early. Any other gradient joins the open bucket
    only if the bucket's all_reduce may move after it: every gradient
    already in the bucket is first used after this one is computed;
    otherwise (or when the bucket is full) the bucket is closed. A bucket
    of one gradient keeps its all_reduce, marked.

    **Options**

    * `bucket-mb`: the bucket cap in MiB (default 25, DDP's
      `bucket_cap_mb`); 0 leaves the program as it is.
  }];
  let options = [
    Option<"bucketMb", "bucket-mb", "double", /*default=*/"25.0",
           "Bucket cap in MiB (0: no buckets)">,
  ];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def RecomputePass : Pass<"tessel-recompute", "::mlir::ModuleOp"> {
  let summary = "Activation checkpointing: recomputes each layer's forward in the backward";
  let description = [{
    On a function that `-tessel-autodiff` differentiated (before the
    optimizer and the sharding passes): the forward ops are those up to the
    loss, the backward ops those after it. Forward ops are grouped into
    layers by their ONNX node name: the layer of `/h.3/attn/MatMul` is
    `/h.3/`, the name up to its first path segment of the form
    `<word>.<number>` (`/h.0/`, `/layers.1/`, `/encoder/layer.2/`); ops
    without one belong to no layer and are kept.

    In each layer, the values the backward reads that no forward op outside
    the layer reads (the layer's internal activations) are recomputed: the
    layer's ops that compute them are cloned right before the first
    backward op that reads one, from the values the layer keeps (its
    inputs, weights, and its outputs that later layers read), and the
    backward reads the clones. The original activations then die in the
    forward, so only the layer boundaries stay alive until the backward:
    the same numbers, less memory, one more forward per layer.
  }];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def StageSplitPass : Pass<"tessel-stage-split", "::mlir::ModuleOp"> {
  let summary = "Assigns every forward op a pipeline stage";
  let description = [{
    Between `-tessel-add-loss` and `-tessel-microbatch` (docs/pipeline.md):
    every op that computes from the function's arguments gets
    `tessel.stage = s`; ops on weights and constants alone get none (each
    stage that needs them computes its own). With `rules`
    (`PATTERN=STAGE`, a glob over the ONNX node name, first match wins), an
    op no rule names takes the largest stage of its operands; with `auto`,
    the ops in program order are cut into `stages` contiguous pieces whose
    largest cost is smallest: each op's predicted seconds on the `cluster`'s
    device (the cost model of `tesselc --predict`, docs/auto-plan.md), or
    its FLOP estimate without a cluster. The loss must be on the last stage
    (with `forward-only`, an inference step's, any output on any stage).
    Errors: a stage left empty, a rule that matches no node, a rule whose
    stage is out of range, an op placed before the stage of a value it
    reads, more stages than ops.

    **Options**

    * `stages`: the number of stages S (pp size times chunks).
    * `rules`: `PATTERN=STAGE` strings.
    * `auto`: balance with the cost model instead.
    * `cluster`: with `auto`, a built-in cluster's name or a cluster file
      whose device times the ops; empty: FLOPs.
  }];
  let options = [
    Option<"stages", "stages", "int64_t", /*default=*/"1", "Pipeline stages">,
    Option<"forwardOnly", "forward-only", "bool", /*default=*/"false",
           "An inference step: no loss, the outputs may be computed on any "
           "stage">,
    ListOption<"rules", "rules", "std::string", "PATTERN=STAGE rules">,
    Option<"autoSplit", "auto", "bool", /*default=*/"false",
           "Balance the stages with the cost model">,
    Option<"cluster", "cluster", "std::string", /*default=*/"",
           "With auto: the cluster (built-in name or file) whose device "
           "times the ops; empty: balance FLOPs">,
  ];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def ZeroPass : Pass<"tessel-zero", "::mlir::ModuleOp"> {
  let summary = "ZeRO: shards the optimizer's updates over dp with sharding specs";
  let description = [{
    On a training step after `-tessel-optimizer`, before `-tessel-propagate`
    (tesselc `--plugin zero1|zero2|fsdp`): each `tessel.adam_update` /
    `tessel.sgd_update` is pinned to its parameter's layout with the `axis`
    (dp) added to the first dim that divides (dim 0 first), and the
    partitioner inserts the collectives of weight-update sharding:

    * stage 1: the optimizer state (`exp_avg`, `exp_avg_sq`,
      `momentum_buffer`) is sharded; the gradient is pinned whole (its
      all_reduce, which `-tessel-bucket-gradients` buckets as DDP's) and
      then to the block (a local slice); each rank updates its block of the
      parameter, which the assign all-gathers back.
    * stage 2: as 1, the gradient pinned straight to the block: one
      `reduce_scatter` per gradient.
    * stage 3 (FSDP): the parameter is sharded too; every other reader reads
      it through a `shard_constraint` to its whole layout (an `all_gather`,
      which `-tessel-gather-at-use` repeats right before each use); the
      update runs on the block in place.

    A parameter with no dim that divides over the axis (with the axes its
    plan already splits it over) keeps its replicated update, with a warning.

    **Options**

    * `stage`: 1, 2 or 3.
    * `axis`: the mesh axis (default `dp`).
  }];
  let options = [
    Option<"stage", "stage", "int64_t", /*default=*/"2", "ZeRO stage: 1, 2 or 3">,
    Option<"axis", "axis", "std::string", /*default=*/"\"dp\"",
           "The data-parallel mesh axis">,
  ];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def PipelineLowerPass : Pass<"tessel-pipeline-lower", "::mlir::ModuleOp"> {
  let summary = "Builds one function per pipeline rank from a verified schedule";
  let description = [{
    After partitioning (docs/pipeline.md): the training step's function,
    whose ops carry `tessel.stage`, `tessel.microbatch` and `tessel.phase`,
    becomes one public function per coordinate of the mesh's `pp` axis
    (`@NAME_pp<r>`, `tessel.pp_rank = r`). Each holds its rank's schedule
    actions in order: an `F`, `B`, `W`, `BW` or `STEP` action clones the ops
    of that stage, microbatch and phase; `SEND_F`/`RECV_F`/`SEND_B`/`RECV_B`
    become `tessel.send`/`tessel.recv` of every value that crosses the cut,
    with static types and tag `schedule tag * width + index`. Ops on
    weights and constants alone are cloned where first needed. The backward
    of a (stage, microbatch) splits into `B` (what the gradient sent to the
    previous stage needs) and `W` (the rest) where the schedule asks.
    The last stage's rank returns the loss; the others return nothing.
    With `forward-only` (an inference step: ops with a stage and no phase
    are forward ops), only the schedule's forward actions and messages
    have ops, and every rank returns the outputs: the last stage's rank
    sends each one it computes to the other pp ranks after its last
    action.

    **Options**

    * `schedule`: a registered schedule name (gpipe, 1f1b, ...).
    * `schedule-file`: a schedule file instead.
    * `chunks`: stages per rank (v).
    * `forward-only`: an inference step (see above).
  }];
  let options = [
    Option<"forwardOnly", "forward-only", "bool", /*default=*/"false",
           "An inference step: forward actions only, outputs on every rank">,
    Option<"schedule", "schedule", "std::string", /*default=*/"\"1f1b\"",
           "Registered schedule">,
    Option<"scheduleFile", "schedule-file", "std::string", /*default=*/"\"\"",
           "Schedule file (docs/pipeline.md)">,
    Option<"chunks", "chunks", "int64_t", /*default=*/"1", "Stages per rank">,
  ];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def GatherAtUsePass : Pass<"tessel-gather-at-use", "::mlir::ModuleOp"> {
  let summary = "ZeRO: reshards a parameter (all_gather, local_slice) right before each use";
  let description = [{
    On a partitioned program: each `all_gather` whose operand is a
    `tessel.weight` (a parameter that `-tessel-zero` stage 3 keeps in
    blocks; the partitioner gathers it once, right after the weight) is
    repeated right before each of its users and the original erased, so
    the gathered copy lives from its use's gather to that use only: in the
    forward and again in the backward (FSDP's gather, use, free). A
    `local_slice` of a weight (the block of a whole parameter that a ZeRO
    stage 1 or 2 update reads) moves to its users the same way.

    With `prefetch=K` (K > 0; tesselc `--fsdp-prefetch`), the gathers are
    asynchronous and issued ahead (FSDP's forward and backward prefetch):
    in program order, the gather for the i-th use moves to right before
    the (i-K)-th use, is marked `tessel.async`, and the runtime runs it on
    its communication thread and waits for it right before its own use.
    While a use computes, at most the next K gathers are in flight, and
    each gathered copy still dies after its use. The order of the gathers
    (the same on every rank) does not change.

    **Options**

    * `prefetch`: gathers issued ahead of their use (0: each gathered
      synchronously right before its use).
  }];
  let options = [
    Option<"prefetch", "prefetch", "int64_t", /*default=*/"0",
           "Parameter gathers in flight ahead of their use (0: synchronous)">,
  ];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def AsyncReduceScatterPass : Pass<"tessel-async-reduce-scatter", "::mlir::ModuleOp"> {
  let summary = "ZeRO 2/3: runs the gradients' reduce_scatters asynchronously";
  let description = [{
    On a partitioned training step with ZeRO stage 2 or 3 (tesselc
    `--plugin zero2|fsdp`, unless `--zero-async-reduce-scatter=0`): each
    `reduce_scatter` of a function's body (the gradients', which the
    partitioner inserts right where each gradient is computed) whose result
    is read directly by ops of that body is marked `tessel.async`. The
    runtime issues it on its communication thread and waits for it right
    before the first op that reads its result (the sharded update at the
    end of the step), so the rest of the backward overlaps it; its operand
    stays alive, not reused, until that wait. The order of the
    reduce_scatters, and every value, stay the same.
  }];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def GeminiChunksPass : Pass<"tessel-gemini-chunks", "::mlir::ModuleOp"> {
  let summary = "Gemini: packs the parameters into fixed-size chunks in order of first use";
  let description = [{
    On a partitioned training step (tesselc `--plugin gemini`, after
    `-tessel-zero` stage 3 and `-tessel-gather-at-use`): every parameter (a
    `tessel.weight` an optimizer update reads as operand 0), in program
    order of its first reader, is packed into chunks of at most
    `chunk-bytes` bytes of this rank's block (Gemini's ChunkManager); a
    parameter larger than a chunk gets a chunk of its own, of its size.
    Each parameter and each of its zero-initialised optimizer states gets
    `tessel.chunk = <index>`.

    ```mlir
    %w = tessel.weight "h.0.attn.c_attn.weight" : tensor<64x384xf32>
    // becomes
    %w = tessel.weight "h.0.attn.c_attn.weight" {tessel.chunk = 2 : i64} : tensor<64x384xf32>
    ```

    **Options**

    * `chunk-bytes`: a chunk's capacity in bytes (> 0).
  }];
  let options = [
    Option<"chunkBytes", "chunk-bytes", "int64_t", /*default=*/"32 << 20",
           "A chunk's capacity in bytes">,
  ];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def GeminiPlacementPass : Pass<"tessel-gemini-placement", "::mlir::ModuleOp"> {
  let summary = "Gemini: places each chunk in device or host memory under a budget, fetching host chunks ahead of use";
  let description = [{
    After `-tessel-gemini-chunks`, on the step in its final op order: a
    chunk is either resident in device memory for the whole step (its
    parameters and optimizer state, updated in place there) or kept in host
    memory, from where a `tessel.chunk_fetch` copies its parameters into
    device memory (the arena) before each run of its readers that neither
    another chunk's reader nor the loss interrupts (its use in the forward,
    in the backward, per microbatch), the run reads the copy, and the copy dies after its last
    reader (the eviction; the host copy stays authoritative). A host
    chunk's update runs on the host copy (Gemini's CPU optimizer). The
    planner counts device memory as the resident chunks' bytes plus the
    arena (the buffer planner's, over the same live ranges as the
    exporter's): every chunk starts in host memory; chunks are made
    resident in order of first use while that stays within
    `device-memory-limit`; two stays of a host chunk merge (fewer moves)
    where that fits, the shortest gaps first; then each fetch moves ahead to
    the first reader of the host stay before it (prefetch) where that fits.
    A chunk larger than the limit, or a step whose activations and fetched
    chunks exceed it at some op with every chunk in host memory, is an
    error that names them. The plan is recorded on the module
    (`tessel.gemini`).

    ```mlir
    %0 = tessel.all_gather %w on @mesh axes = ["dp"] dim = 0 : ...
    // becomes, when %w's chunk 3 is in host memory
    %c:2 = tessel.chunk_fetch %w, %v {chunk = 3 : i64} : ...
    %0 = tessel.all_gather %c#0 on @mesh axes = ["dp"] dim = 0 : ...
    ```

    **Options**

    * `device-memory-limit`: bytes of device memory per rank (0: no limit,
      every chunk resident).
  }];
  let options = [
    Option<"deviceMemoryLimit", "device-memory-limit", "int64_t",
           /*default=*/"0", "Bytes of device memory per rank (0: no limit)">,
  ];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def MixedPrecisionPass : Pass<"tessel-mixed-precision", "::mlir::ModuleOp"> {
  let summary = "Mixed precision: GEMMs computed in bf16 or fp16, master weights in f32";
  let description = [{
    Before `-tessel-autodiff` (tesselc `--precision bf16|fp16`): each
    `matmul` and `gemm` (what `torch.autocast` runs in the low precision)
    reads its f32 operands cast to bf16 (or f16) and becomes a half GEMM
    (f32 sums, rounded once), whose result its readers widen: what the
    GEMMs read and write is stored in two bytes, and the backward, which
    autodiff derives through the casts, computes in the half as well. Each
    `attention` reads q, kt and v cast to the format and its result is that
    type (autocast's half `scaled_dot_product_attention`: f32 sums and
    softmax, the result rounded once); its mask and lse stay f32. Each
    `conv2d` (no half kernels) reads its f32 operands through
    `tessel.round_float` to the format and its result is rounded too (the
    gradient of `round_float` rounds `dy`). Norms, softmax, the loss and
    the optimizer stay f32, and the parameters and the optimizer state stay
    f32 (master weights).

    **Options**

    * `precision`: `bf16` (8 exponent, 7 mantissa bits) or `fp16` (5, 10).
  }];
  let options = [
    Option<"precision", "precision", "std::string", /*default=*/"\"bf16\"",
           "bf16 | fp16">,
  ];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def MarkBf16OperandsPass : Pass<"tessel-mark-bf16-operands"> {
  let summary = "Marks the GEMMs and convolutions whose operands hold bf16 values";
  let description = [{
    Sets `bf16_operands` on each `matmul`, `gemm`, `conv2d`,
    `conv2d_backward_data` and `conv2d_backward_weight` whose two multiplied
    operands (a gemm's `c` and a conv2d's `bias` are added in f32) are f32
    tensors that bf16
    represents exactly: results of `tessel.round_float` to a format of at
    most 8 exponent and 7 mantissa bits, `tessel.cast`s of bf16 tensors to
    f32 (a bf16 model's operands after -tessel-float-normalization), or of
    ops that only move such
    values (reshape, transpose, slice, split, concat, expand, gather,
    local_slice, all_gather, all_to_all, collective_permute,
    shard_constraint), or constants whose floats have their low 16 bits
    zero. Converting such a value to bf16 is exact, so a backend may
    multiply in bf16 with f32 accumulation and give the same product up to
    the order of its f32 sums: the CPU runtime then runs it on oneDNN's
    bf16 matmul or convolution where the CPU has bf16 instructions, the
    CUDA runtime on cuBLAS's bf16 GEMMs (docs/training.md,
    "Mixed precision"). tesselc runs it last, on the per-rank program
    (after -tessel-float-normalization), so the backward's GEMMs are
    marked too.

    ```mlir
    %a = tessel.round_float %x {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<8x64xf32>
    %b = tessel.round_float %w {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<64x32xf32>
    %y = tessel.matmul %a, %b : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
    // becomes
    %y = tessel.matmul %a, %b {bf16_operands} : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
    ```
  }];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def MasterWeightsPass : Pass<"tessel-master-weights", "::mlir::ModuleOp"> {
  let summary = "Trains each bf16 or f16 parameter through an f32 master copy";
  let description = [{
    Runs after `-tessel-classify-parameters`, before `-tessel-autodiff`.
    Each trainable `tessel.weight` (the module's `tessel.trainable`) of
    element type bf16 or f16 becomes f32, the master copy the optimizer
    updates (the artifact widens the model's half data exactly), and a
    `cast` back to the half, the working copy, feeds its readers: PyTorch
    AMP's and Megatron's layout, f32 master weights and optimizer states
    with half activations. Autodiff gives the master the working copy's
    gradient cast to f32. Frozen half weights stay half (docs/precision.md).

    ```mlir
    %w = tessel.weight "fc.weight" : tensor<4x4xbf16>
    // becomes
    %m = tessel.weight "fc.weight" : tensor<4x4xf32>
    %w = tessel.cast %m : tensor<4x4xf32> -> tensor<4x4xbf16>
    ```
  }];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

def FloatNormalizationPass : Pass<"tessel-float-normalization"> {
  let summary = "Computes each op on bf16 or f16 tensors in f32, rounding its result once";
  let description = [{
    The runtime stores bf16 and f16 tensors and moves them (reshape,
    transpose, slice, split, concat, expand, gather, gather_elements,
    where, weight, constant, assign, all_gather, all_to_all, broadcast,
    collective_permute, send, recv, chunk_fetch) and converts them (cast),
    and multiplies them (`matmul` and `gemm` whose operands and result are
    all the same half: oneDNN's and cuBLAS's half GEMMs, f32 sums rounded
    once), but otherwise computes only in f32, i64, i32 and bool. Each
    other Tessel op with a half operand or result reads its half operands
    through a `cast` to f32 (one per value, shared by its readers) and
    writes an f32 result that a `cast` rounds back to the half, to nearest
    even: PyTorch's semantics for half tensors on the CPU, where each op
    computes in f32 and rounds its result. Sums over ranks (`all_reduce`,
    `reduce_scatter`) add in f32 too. tesselc runs it last, on the per-rank
    program (docs/precision.md).

    ```mlir
    %y = tessel.mul %a, %b : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
    // becomes
    %a32 = tessel.cast %a : tensor<4xbf16> -> tensor<4xf32>
    %b32 = tessel.cast %b : tensor<4xbf16> -> tensor<4xf32>
    %p = tessel.mul %a32, %b32 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %y = tessel.cast %p : tensor<4xf32> -> tensor<4xbf16>
    ```
  }];
  let dependentDialects = ["::mlir::tessel::TesselDialect"];
}

#endif // TESSEL_TRANSFORMS_PASSES_TD
