//===- TesselDialect.td - the tessel dialect ---------------*- tablegen -*-===//
//
// The `tessel` dialect: tensor programs whose values carry sharding specs over
// a named device mesh, and the collectives that partitioned programs use.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_DIALECT_TD
#define TESSEL_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Tessel_Dialect : Dialect {
  let name = "tessel";
  let cppNamespace = "::mlir::tessel";
  let summary = "Tensor programs with sharding specs over a device mesh";
  let description = [{
    The `tessel` dialect describes tensor programs (as imported from ONNX) in
    which every value may carry a sharding spec: for each tensor dimension, the
    ordered list of mesh axes that split it, the axes over which the value is a
    pending partial reduction, and an explicit pad where a dimension does not
    divide evenly. Meshes are symbols (`tessel.mesh`) that specs refer to.

    Specs are attached as the discardable attribute `tessel.sharding`:

    * on an op: a `#tessel.sharding` for a single-result op, or an array of
      them (one per result) for a multi-result op;
    * on a `func.func` argument or result: a `#tessel.sharding`.

    Every compute op declares a factor-based sharding rule
    (`#tessel.rule`) through `ShardingRuleOpInterface`; propagation and
    partitioning read only these rules.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
    /// The discardable attribute that carries a value's sharding spec.
    static constexpr ::llvm::StringLiteral kShardingAttrName = "tessel.sharding";
    /// The discardable attribute `-tessel-print-sharding-rules` attaches.
    static constexpr ::llvm::StringLiteral kRuleAttrName = "tessel.rule";

    // The IR contracts: attributes one pass writes and another reads
    // (docs/ir-contracts.md says who writes and who reads each). The
    // dialect's verifier checks each one's form.

    /// On a `tessel.weight` of a partitioned program: its global spec
    /// (#tessel.sharding); written by -tessel-partition, read by the exporter.
    static constexpr ::llvm::StringLiteral kGlobalShardingAttrName =
        "tessel.global_sharding";
    /// On a partitioned function: one global #tessel.sharding (or `unit`
    /// for a non-tensor) per argument / result; written by
    /// -tessel-partition, read by the exporter.
    static constexpr ::llvm::StringLiteral kGlobalArgShardingsAttrName =
        "tessel.global_arg_shardings";
    static constexpr ::llvm::StringLiteral kGlobalResultShardingsAttrName =
        "tessel.global_result_shardings";
    /// On a `tessel.weight` that is a slice of a parameter:
    /// `array<i64: dim, start, limit>` of the parameter it names; written by
    /// -tessel-propagate (fused projections split), read by the exporter.
    static constexpr ::llvm::StringLiteral kSourceSliceAttrName =
        "tessel.source_slice";
    /// On an imported function: the ONNX graph's input / output names, one
    /// string per argument / result; written by the importer, read by plans
    /// and the exporter.
    static constexpr ::llvm::StringLiteral kInputNamesAttrName =
        "tessel.input_names";
    static constexpr ::llvm::StringLiteral kOutputNamesAttrName =
        "tessel.output_names";
    /// On a function argument: the value the pad of its padded dim holds
    /// (an integer or float attribute of the argument's element type; zero
    /// without it); written by -tessel-add-loss on `labels` (-100, the
    /// ignored label), read by -tessel-partition (what the pad holds) and
    /// the exporter (which fills it).
    static constexpr ::llvm::StringLiteral kPadValueAttrName =
        "tessel.pad_value";
    /// On an imported module: the absolute path of the ONNX model whose
    /// weights it names; written and read by tesselc.
    static constexpr ::llvm::StringLiteral kModelPathAttrName = "tessel.model";
    /// On a differentiated function: the names of its gradient results, one
    /// string per gradient, which are the function's last results in this
    /// order (a weight's name, or "arg<i>"); written by -tessel-autodiff,
    /// read by -tessel-optimizer.
    static constexpr ::llvm::StringLiteral kGradientsAttrName =
        "tessel.gradients";
    /// On an imported module: what the importer learnt of each weight from
    /// the model (exporter metadata, folding), a dictionary name ->
    /// `[kind, detail]` or `[kind, detail, parameter]`, kind one of
    /// "parameter", "buffer", "constant", "initializer" (nothing known),
    /// `parameter` the PyTorch parameter an exporter's folded copy holds;
    /// read by -tessel-classify-parameters.
    static constexpr ::llvm::StringLiteral kWeightOriginsAttrName =
        "tessel.weight_origins";
    /// On an imported module: PyTorch's names of the weights whose own name
    /// is not (or not only) their parameter's, a dictionary weight name ->
    /// `{parameter = "...", layout = "transposed" | "rows", aliases =
    /// [...]}` (every field optional): `parameter` the PyTorch parameter an
    /// exporter's folded copy holds and `layout` how (the weight is it
    /// transposed, or the rows the model reads of it), `aliases` the
    /// parameter's other names (ties: GPT-2's lm_head.weight and
    /// transformer.wte.weight). Written by the importer; read by tesselc
    /// --train into training.pb for tessel-run --save-weights.
    static constexpr ::llvm::StringLiteral kParameterNamesAttrName =
        "tessel.parameter_names";
    /// On an imported module: the initializers the importer read as another
    /// weight (retied copies), a dictionary initializer -> `[weight,
    /// layout]`, layout "" (equal contents) or "transposed"; tesselc
    /// --train's source model computes each from the trained weight.
    static constexpr ::llvm::StringLiteral kTiedCopiesAttrName =
        "tessel.tied_copies";
    /// On a training module: the names of the weights that train, written
    /// by -tessel-classify-parameters, read by -tessel-autodiff (which then
    /// differentiates these and no other weight).
    static constexpr ::llvm::StringLiteral kTrainableAttrName =
        "tessel.trainable";
    /// On a training module: each float weight's class, name ->
    /// `[trainable, reason]`; written by -tessel-classify-parameters, read
    /// by --report.
    static constexpr ::llvm::StringLiteral kParameterClassesAttrName =
        "tessel.parameter_classes";
    /// On an all_reduce of a partitioned program: the index of the gradient
    /// bucket it reduces (i64 >= 0); the runtime runs it asynchronously and
    /// waits before the first use of its result. Written by
    /// -tessel-bucket-gradients, read by the exporter and --report.
    static constexpr ::llvm::StringLiteral kBucketAttrName = "tessel.bucket";
    /// On a tessel.weight of a partitioned program (tesselc --plugin
    /// gemini): the index of the chunk (i64 >= 0) its parameter, or the
    /// optimizer state of that parameter, is packed into. Written by
    /// -tessel-gemini-chunks, read by -tessel-gemini-placement and --report.
    static constexpr ::llvm::StringLiteral kChunkAttrName = "tessel.chunk";
    /// On the module: what -tessel-gemini-placement planned (a dictionary:
    /// `limit`, `resident`, `arena`, `peak` in bytes, `chunk_bytes`, and
    /// `placement`, "device" or "host" per chunk); read by --report.
    static constexpr ::llvm::StringLiteral kGeminiPlanAttrName =
        "tessel.gemini";
    /// On an all_gather of a weight in a partitioned program (FSDP's
    /// prefetch; unit): issued ahead of its use, the runtime runs it
    /// asynchronously and waits before the first use of its result.
    /// Written by -tessel-gather-at-use, read by the exporter.
    static constexpr ::llvm::StringLiteral kAsyncAttrName = "tessel.async";
  }];
}

class Tessel_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tessel_Dialect, mnemonic, traits>;

class Tessel_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Tessel_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

#endif // TESSEL_DIALECT_TD
