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
  return op->emitOpError() << "unknown tessel attribute '"
                           << attr.getName().getValue() << "'";
}

// Arguments and results of functions carry one #tessel.sharding each.
static LogicalResult verifyFunctionValueAttr(Operation *op, NamedAttribute attr,
                                             Type type, StringRef what,
                                             unsigned index) {
  if (attr.getName() != TesselDialect::kShardingAttrName)
    return op->emitOpError() << "unknown tessel attribute '"
                             << attr.getName().getValue() << "' on " << what
                             << " " << index;
  auto sharding = dyn_cast<TensorShardingAttr>(attr.getValue());
  if (!sharding)
    return op->emitOpError() << what << " " << index
                             << ": 'tessel.sharding' must be a #tessel.sharding";
  std::string desc = (what + " " + Twine(index)).str();
  return verifyShardingForType(sharding, type, op, desc);
}

LogicalResult TesselDialect::verifyRegionArgAttribute(Operation *op,
                                                      unsigned regionIndex,
                                                      unsigned argIndex,
                                                      NamedAttribute attr) {
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn)
    return op->emitOpError() << "'tessel.sharding' is only allowed on function "
                                "arguments and results";
  return verifyFunctionValueAttr(op, attr, fn.getArgumentTypes()[argIndex],
                                 "argument", argIndex);
}

LogicalResult TesselDialect::verifyRegionResultAttribute(Operation *op,
                                                         unsigned regionIndex,
                                                         unsigned resultIndex,
                                                         NamedAttribute attr) {
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn)
    return op->emitOpError() << "'tessel.sharding' is only allowed on function "
                                "arguments and results";
  return verifyFunctionValueAttr(op, attr, fn.getResultTypes()[resultIndex],
                                 "function result", resultIndex);
}
