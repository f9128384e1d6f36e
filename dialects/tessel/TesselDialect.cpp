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

namespace {
/// A discardable attribute that only some ops carry and whose value has one
/// kind: `carries` says whether `op` may carry it, `valid` whether the value
/// is right, `must` what it must be, for the message.
struct SimpleAttrRule {
  StringRef name;
  bool (*carries)(Operation *op);
  bool (*valid)(Attribute value);
  const char *must;
};

bool isIndex(Attribute a) {
  auto index = dyn_cast<IntegerAttr>(a);
  return index && index.getType().isInteger(64) && index.getInt() >= 0;
}
bool isModule(Operation *op) { return isa<ModuleOp>(op); }

const SimpleAttrRule kSimpleAttrRules[] = {
    {TesselDialect::kRuleAttrName, [](Operation *) { return true; },
     [](Attribute a) { return isa<OpShardingRuleAttr>(a); }, "a #tessel.rule"},
    {TesselDialect::kBucketAttrName,
     [](Operation *op) { return isa<AllReduceOp>(op); }, isIndex,
     "an i64 >= 0 on a tessel.all_reduce"},
    {TesselDialect::kChunkAttrName,
     [](Operation *op) { return isa<WeightOp>(op); }, isIndex,
     "an i64 >= 0 on a tessel.weight"},
    {TesselDialect::kGeminiPlanAttrName, isModule,
     [](Attribute a) { return isa<DictionaryAttr>(a); },
     "a dictionary on a module"},
    {TesselDialect::kAsyncAttrName,
     [](Operation *op) { return isa<AllGatherOp, ReduceScatterOp>(op); },
     [](Attribute a) { return isa<UnitAttr>(a); },
     "a unit attribute on a tessel.all_gather or tessel.reduce_scatter"},
    {TesselDialect::kTrainableAttrName, isModule,
     [](Attribute a) {
       auto names = dyn_cast<ArrayAttr>(a);
       return names && llvm::all_of(names, [](Attribute n) {
                return isa<StringAttr>(n);
              });
     },
     "an array of strings on a module"},
    {TesselDialect::kModelPathAttrName, isModule,
     [](Attribute a) { return isa<StringAttr>(a); }, "a string on a module"},
};
} // namespace

LogicalResult TesselDialect::verifyOperationAttribute(Operation *op,
                                                      NamedAttribute attr) {
  if (attr.getName() == kShardingAttrName)
    return verifyResultShardings(op, attr.getValue());
  for (const SimpleAttrRule &rule : kSimpleAttrRules)
    if (attr.getName() == rule.name) {
      if (!rule.carries(op) || !rule.valid(attr.getValue()))
        return op->emitOpError()
               << "'" << rule.name << "' must be " << rule.must;
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
  if (attr.getName() == kParameterNamesAttrName ||
      attr.getName() == kTiedCopiesAttrName) {
    const bool copies = attr.getName() == kTiedCopiesAttrName;
    auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
    bool ok = isa<ModuleOp>(op) && dict;
    auto strings = [](Attribute a, size_t n) {
      auto list = dyn_cast_or_null<ArrayAttr>(a);
      return list && (n == 0 || list.size() == n) &&
             llvm::all_of(list, [](Attribute s) { return isa<StringAttr>(s); });
    };
    for (NamedAttribute e : ok ? dict.getValue() : ArrayRef<NamedAttribute>()) {
      if (copies) {
        ok = strings(e.getValue(), 2);
      } else {
        auto fields = dyn_cast<DictionaryAttr>(e.getValue());
        ok = fields && llvm::all_of(fields, [&](NamedAttribute f) {
               StringRef k = f.getName().getValue();
               if (k == "aliases")
                 return strings(f.getValue(), 0);
               return (k == "parameter" || k == "layout") &&
                      isa<StringAttr>(f.getValue());
             });
      }
      if (!ok)
        return op->emitOpError()
               << "'" << attr.getName().getValue() << "' entry '"
               << e.getName().getValue() << "' must be "
               << (copies ? "[string, string]"
                          : "{parameter = string, layout = string, aliases "
                            "= [strings]}");
    }
    if (!ok)
      return op->emitOpError() << "'" << attr.getName().getValue()
                               << "' must be a dictionary on a module";
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
  if (attr.getName() == kPpScheduleAttr) {
    auto d = dyn_cast<DictionaryAttr>(attr.getValue());
    bool ok = d && isa<FunctionOpInterface>(op) &&
              isa_and_nonnull<StringAttr>(d.get("name"));
    for (StringRef k : {"chunks", "microbatches", "tag_width"}) {
      auto v = d ? d.getAs<IntegerAttr>(k) : IntegerAttr();
      ok &= v && v.getInt() >= 1;
    }
    if (!ok)
      return op->emitOpError()
             << "'" << kPpScheduleAttr
             << "' must be a dictionary {name = string, chunks, "
                "microbatches, tag_width: integers >= 1} on a function";
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
