//===- PartitionOps.cpp - ops of partitioned programs ---------------------===//

#include "dialects/tessel/PartitionOps.h"

#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::tessel;

#define GET_OP_CLASSES
#include "dialects/tessel/PartitionOps.cpp.inc"

//===----------------------------------------------------------------------===//
// LocalSliceOp
//===----------------------------------------------------------------------===//

LogicalResult
LocalSliceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto mesh = symbols.lookupNearestSymbolFrom<MeshOp>(*this, getMeshAttr());
  // C1
  if (!mesh)
    return emitOpError() << "refers to unknown mesh " << getMeshAttr();
  // C2
  if (getAxes().empty())
    return emitOpError() << "needs at least one mesh axis";
  llvm::SmallSet<StringRef, 4> seen;
  int64_t n = 1;
  for (Attribute a : getAxes()) {
    StringRef axis = cast<StringAttr>(a).getValue();
    std::optional<int64_t> size = mesh.getAxisSize(axis);
    if (!size)
      return emitOpError() << "axis \"" << axis << "\" is not in mesh @"
                           << mesh.getSymName();
    if (!seen.insert(axis).second)
      return emitOpError() << "axis \"" << axis << "\" appears twice";
    n *= *size;
  }
  // C4
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getType());
  int64_t d = getDim();
  if (in.getDimSize(d) % n != 0 || out.getDimSize(d) * n != in.getDimSize(d))
    return emitOpError() << "dim " << d << " of size " << in.getDimSize(d)
                         << " over " << n << " ranks must give "
                         << in.getDimSize(d) / n << " per rank, not "
                         << out.getDimSize(d);
  return success();
}

LogicalResult LocalSliceOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getType());
  int64_t d = getDim();
  // C3
  if (d < 0 || d >= in.getRank())
    return emitOpError() << "dim " << d << " is out of range [0, "
                         << in.getRank() << ")";
  if (in.getRank() != out.getRank() ||
      in.getElementType() != out.getElementType())
    return emitOpError() << "operand " << in << " and result " << out
                         << " differ in rank or element type";
  // C4 (other dims)
  for (int64_t i = 0; i < in.getRank(); ++i)
    if (i != d && in.getDimSize(i) != out.getDimSize(i))
      return emitOpError() << "dim " << i << " differs: " << in.getDimSize(i)
                           << " != " << out.getDimSize(i);
  return success();
}

int64_t LocalSliceOp::getGroupSize() {
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(*this, getMeshAttr());
  int64_t n = 1;
  for (Attribute a : getAxes())
    n *= mesh ? mesh.getAxisSize(cast<StringAttr>(a).getValue()).value_or(1) : 1;
  return n;
}
