//===- TesselDialect.cpp - the tessel dialect -----------------------------===//

#include "dialects/tessel/PipelineAttrs.h"
#include "dialects/tessel/ExtensionBridge.h"
#include "dialects/tessel/TesselOps.h"
#include "dialects/tessel/Verifiers.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::tessel;

#include "dialects/tessel/TesselDialect.cpp.inc"

void TesselDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "dialects/tessel/TesselOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/tessel/CollectiveOps.cpp.inc"
      >();
}

// tessel.global_sharding: a #tessel.sharding; tessel.source_slice:
// array<i64: dim, start, limit> with 0 <= start < limit. On weights only.
static LogicalResult verifyWeightContract(Operation *op, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (!isa<WeightOp>(op))
    return op->emitOpError() << "'" << name << "' is only allowed on "
                             << "tessel.weight";
  if (name == TesselDialect::kGlobalShardingAttrName) {
    if (!isa<TensorShardingAttr>(attr.getValue()))
      return op->emitOpError() << "'" << name << "' must be a #tessel.sharding";
    return success();
  }
  auto slice = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
  if (!slice || slice.size() != 3 || slice[0] < 0 || slice[1] < 0 ||
      slice[2] <= slice[1])
    return op->emitOpError()
           << "'" << name
           << "' must be array<i64: dim, start, limit> with 0 <= start < limit";
  return success();
}

// The arrays on a function: one entry per argument (or result), or for
// tessel.gradients one per gradient (the function's last results);
// shardings are #tessel.sharding or unit, names (non-empty) strings.
static LogicalResult verifyFunctionContract(Operation *op,
                                            NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  auto fn = dyn_cast<FunctionOpInterface>(op);
  auto array = dyn_cast<ArrayAttr>(attr.getValue());
  if (!fn || !array)
    return op->emitOpError() << "'" << name
                             << "' must be an array on a function";
  const bool gradients = name == TesselDialect::kGradientsAttrName;
  const bool args = name == TesselDialect::kGlobalArgShardingsAttrName ||
                    name == TesselDialect::kInputNamesAttrName;
  const size_t want = args ? fn.getNumArguments() : fn.getNumResults();
  if (gradients ? array.size() > want : array.size() != want)
    return op->emitOpError()
           << "'" << name << "' " << (gradients ? "names " : "has ")
           << array.size() << (gradients ? " gradients" : " entries")
           << ", the function has " << want
           << (args ? " arguments" : " results");
  const bool names = gradients ||
                     name == TesselDialect::kInputNamesAttrName ||
                     name == TesselDialect::kOutputNamesAttrName;
  for (auto [i, a] : llvm::enumerate(array)) {
    auto str = dyn_cast<StringAttr>(a);
    bool ok = names ? str && !(gradients && str.getValue().empty())
                    : isa<TensorShardingAttr>(a) || isa<UnitAttr>(a);
    if (!ok)
      return op->emitOpError()
             << "'" << name << "' entry " << i << " must be "
             << (gradients ? "a non-empty string"
                 : names   ? "a string"
                           : "a #tessel.sharding or unit");
  }
  return success();
}

LogicalResult TesselDialect::verifyOperationAttribute(Operation *op,
                                                      NamedAttribute attr) {
  if (attr.getName() == kShardingAttrName)
    return verifyResultShardings(op, attr.getValue());
  if (attr.getName() == kRuleAttrName) {
    if (!isa<OpShardingRuleAttr>(attr.getValue()))
      return op->emitOpError() << "'" << kRuleAttrName
                               << "' must be a #tessel.rule";
    return success();
  }
  if (attr.getName() == kGlobalShardingAttrName ||
      attr.getName() == kSourceSliceAttrName)
    return verifyWeightContract(op, attr);
  if (attr.getName() == kGlobalArgShardingsAttrName ||
      attr.getName() == kGlobalResultShardingsAttrName ||
      attr.getName() == kInputNamesAttrName ||
      attr.getName() == kOutputNamesAttrName)
    return verifyFunctionContract(op, attr);
  if (attr.getName() == kGradientsAttrName)
    return verifyFunctionContract(op, attr);
  if (attr.getName() == kBucketAttrName) {
    auto index = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<AllReduceOp>(op) || !index || !index.getType().isInteger(64) ||
        index.getInt() < 0)
      return op->emitOpError() << "'" << kBucketAttrName
                               << "' must be an i64 >= 0 on a tessel.all_reduce";
    return success();
  }
  if (attr.getName() == kChunkAttrName) {
    auto index = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<WeightOp>(op) || !index || !index.getType().isInteger(64) ||
        index.getInt() < 0)
      return op->emitOpError() << "'" << kChunkAttrName
                               << "' must be an i64 >= 0 on a tessel.weight";
    return success();
  }
  if (attr.getName() == kGeminiPlanAttrName) {
    if (!isa<ModuleOp>(op) || !isa<DictionaryAttr>(attr.getValue()))
      return op->emitOpError() << "'" << kGeminiPlanAttrName
                               << "' must be a dictionary on a module";
    return success();
  }
  if (attr.getName() == kAsyncAttrName) {
    if (!isa<AllGatherOp, ReduceScatterOp>(op) ||
        !isa<UnitAttr>(attr.getValue()))
      return op->emitOpError() << "'" << kAsyncAttrName
                               << "' must be a unit attribute on a "
                                  "tessel.all_gather or tessel.reduce_scatter";
    return success();
  }
  if (attr.getName() == kWeightOriginsAttrName ||
      attr.getName() == kParameterClassesAttrName) {
    // name -> [kind, detail] (two strings) / [trainable, reason].
    const bool classes = attr.getName() == kParameterClassesAttrName;
    auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
    bool ok = isa<ModuleOp>(op) && dict;
    for (NamedAttribute e : ok ? dict.getValue() : ArrayRef<NamedAttribute>()) {
      auto pair = dyn_cast<ArrayAttr>(e.getValue());
      ok = pair && (pair.size() == 2 || (!classes && pair.size() == 3)) &&
           (classes ? isa<BoolAttr>(pair[0]) : isa<StringAttr>(pair[0])) &&
           llvm::all_of(pair.getValue().drop_front(),
                        [](Attribute a) { return isa<StringAttr>(a); });
      if (!ok)
        return op->emitOpError()
               << "'" << attr.getName().getValue() << "' entry '"
               << e.getName().getValue() << "' must be "
               << (classes ? "[bool, string]"
                           : "[string, string] or [string, string, string]");
    }
    if (!ok)
      return op->emitOpError() << "'" << attr.getName().getValue()
                               << "' must be a dictionary on a module";
    return success();
  }
  if (attr.getName() == kTrainableAttrName) {
    auto names = dyn_cast<ArrayAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !names ||
        !llvm::all_of(names, [](Attribute a) { return isa<StringAttr>(a); }))
      return op->emitOpError() << "'" << kTrainableAttrName
                               << "' must be an array of strings on a module";
    return success();
  }
  if (attr.getName() == kModelPathAttrName) {
    if (!isa<ModuleOp>(op) || !isa<StringAttr>(attr.getValue()))
      return op->emitOpError() << "'" << kModelPathAttrName
                               << "' must be a string on a module";
    return success();
  }
  // Pipelined training's tags (dialects/tessel/PipelineAttrs.h).
  if (attr.getName() == kStageAttr || attr.getName() == kMicrobatchAttr ||
      attr.getName() == kPpRankAttr) {
    auto value = dyn_cast<IntegerAttr>(attr.getValue());
    const int64_t lowest = attr.getName() == kMicrobatchAttr ? -1 : 0;
    if (!value || !value.getType().isInteger(64) || value.getInt() < lowest)
      return op->emitOpError() << "'" << attr.getName().getValue()
                               << "' must be an i64 >= " << lowest;
    return success();
  }
  if (attr.getName() == kPhaseAttr) {
    auto phase = dyn_cast<StringAttr>(attr.getValue());
    if (!phase || !llvm::is_contained({"F", "B", "W", "BW", "STEP", "SEND",
                                       "RECV"},
                                      phase.getValue()))
      return op->emitOpError() << "'" << kPhaseAttr
                               << "' must be one of F, B, W, BW, STEP, "
                                  "SEND, RECV";
    return success();
  }
  if (attr.getName() == kPerRankStateAttrName) {
    auto w = dyn_cast<WeightOp>(op);
    if (!w || !w.getZeros() || !isa<UnitAttr>(attr.getValue()))
      return op->emitOpError() << "'" << kPerRankStateAttrName
                               << "' must be a unit attribute on a "
                                  "tessel.weight ... zeros";
    return success();
  }
  return op->emitOpError() << "unknown tessel attribute '"
                           << attr.getName().getValue() << "'";
}

// Arguments and results of functions carry one #tessel.sharding each.
static LogicalResult verifyFunctionValueAttr(Operation *op, NamedAttribute attr,
                                             bool isResult, unsigned index) {
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn)
    return op->emitOpError() << "'tessel.sharding' is only allowed on function "
                                "arguments and results";
  StringRef what = isResult ? "function result" : "argument";
  if (!isResult && attr.getName() == TesselDialect::kPadValueAttrName) {
    auto t = dyn_cast<RankedTensorType>(fn.getArgumentTypes()[index]);
    auto typed = dyn_cast<TypedAttr>(attr.getValue());
    if (!t || !typed || !isa<IntegerAttr, FloatAttr>(typed) ||
        typed.getType() != t.getElementType())
      return op->emitOpError()
             << "argument " << index << ": 'tessel.pad_value' must be an "
             << "integer or float attribute of the argument's element type";
    return success();
  }
  if (attr.getName() != TesselDialect::kShardingAttrName)
    return op->emitOpError() << "unknown tessel attribute '"
                             << attr.getName().getValue() << "' on " << what
                             << " " << index;
  auto sharding = dyn_cast<TensorShardingAttr>(attr.getValue());
  if (!sharding)
    return op->emitOpError() << what << " " << index
                             << ": 'tessel.sharding' must be a #tessel.sharding";
  Type type = isResult ? fn.getResultTypes()[index]
                       : fn.getArgumentTypes()[index];
  std::string desc = (what + " " + Twine(index)).str();
  return verifyShardingForType(sharding, type, op, desc);
}

LogicalResult TesselDialect::verifyRegionArgAttribute(Operation *op,
                                                      unsigned regionIndex,
                                                      unsigned argIndex,
                                                      NamedAttribute attr) {
  return verifyFunctionValueAttr(op, attr, /*isResult=*/false, argIndex);
}

LogicalResult TesselDialect::verifyRegionResultAttribute(Operation *op,
                                                         unsigned regionIndex,
                                                         unsigned resultIndex,
                                                         NamedAttribute attr) {
  return verifyFunctionValueAttr(op, attr, /*isResult=*/true, resultIndex);
}
