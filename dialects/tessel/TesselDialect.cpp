//===- TesselDialect.cpp - the tessel dialect -----------------------------===//

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

// The per-argument / per-result arrays on a function: one entry per
// argument (or result); shardings are #tessel.sharding or unit, names strings.
static LogicalResult verifyFunctionContract(Operation *op,
                                            NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  auto fn = dyn_cast<FunctionOpInterface>(op);
  auto array = dyn_cast<ArrayAttr>(attr.getValue());
  if (!fn || !array)
    return op->emitOpError() << "'" << name
                             << "' must be an array on a function";
  const bool args = name == TesselDialect::kGlobalArgShardingsAttrName ||
                    name == TesselDialect::kInputNamesAttrName;
  const size_t want = args ? fn.getNumArguments() : fn.getNumResults();
  if (array.size() != want)
    return op->emitOpError() << "'" << name << "' has " << array.size()
                             << " entries, the function has " << want
                             << (args ? " arguments" : " results");
  const bool names = name == TesselDialect::kInputNamesAttrName ||
                     name == TesselDialect::kOutputNamesAttrName;
  for (auto [i, a] : llvm::enumerate(array)) {
    bool ok = names ? isa<StringAttr>(a)
                    : isa<TensorShardingAttr>(a) || isa<UnitAttr>(a);
    if (!ok)
      return op->emitOpError()
             << "'" << name << "' entry " << i << " must be "
             << (names ? "a string" : "a #tessel.sharding or unit");
  }
  return success();
}

// tessel.gradients: one non-empty string per gradient, the function's last
// results.
static LogicalResult verifyGradientsContract(Operation *op,
                                             NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  auto fn = dyn_cast<FunctionOpInterface>(op);
  auto array = dyn_cast<ArrayAttr>(attr.getValue());
  if (!fn || !array)
    return op->emitOpError() << "'" << name
                             << "' must be an array on a function";
  if (array.size() > fn.getNumResults())
    return op->emitOpError() << "'" << name << "' names " << array.size()
                             << " gradients, the function has "
                             << fn.getNumResults() << " results";
  for (auto [i, a] : llvm::enumerate(array)) {
    auto s = dyn_cast<StringAttr>(a);
    if (!s || s.getValue().empty())
      return op->emitOpError()
             << "'" << name << "' entry " << i << " must be a non-empty string";
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
    return verifyGradientsContract(op, attr);
  if (attr.getName() == kModelPathAttrName) {
    if (!isa<ModuleOp>(op) || !isa<StringAttr>(attr.getValue()))
      return op->emitOpError() << "'" << kModelPathAttrName
                               << "' must be a string on a module";
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
