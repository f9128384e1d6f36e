//===- OutputCollectives.cpp - what makes a program's outputs whole -------===//

#include "tessel/Export/OutputCollectives.h"

#include "tessel/Lifetimes/BufferLifetimes.h"

#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::tessel;

std::vector<OutputCollective>
mlir::tessel::getOutputCollectives(func::FuncOp fn) {
  std::vector<OutputCollective> out;
  auto specs =
      fn->getAttrOfType<ArrayAttr>(TesselDialect::kGlobalResultShardingsAttrName);
  if (!specs)
    return out;
  auto names = fn->getAttrOfType<ArrayAttr>(TesselDialect::kOutputNamesAttrName);
  llvm::StringMap<int64_t> axisSize;
  if (auto module = fn->getParentOfType<ModuleOp>())
    for (MeshOp mesh : module.getOps<MeshOp>())
      for (auto [n, size] :
           llvm::zip(mesh.getAxisNames(), mesh.getAxisSizes()))
        axisSize[cast<StringAttr>(n).getValue()] = size;
  for (auto [i, attr] : llvm::enumerate(specs)) {
    auto spec = dyn_cast<TensorShardingAttr>(attr);
    auto type = i < fn.getNumResults()
                    ? dyn_cast<RankedTensorType>(fn.getResultTypes()[i])
                    : RankedTensorType();
    if (!spec || !type)
      continue;
    std::string output = names && i < names.size() && isa<StringAttr>(names[i])
                             ? cast<StringAttr>(names[i]).str()
                             : "output" + std::to_string(i);
    SmallVector<int64_t> shape(type.getShape());
    auto bytes = [&] {
      return tensorBytes(RankedTensorType::get(shape, type.getElementType()));
    };
    for (PartialAxisAttr p : spec.getPartials())
      out.push_back({true, p.getKind(), {p.getAxis().getValue().str()}, output,
                     bytes()});
    for (auto [d, dim] : llvm::enumerate(spec.getDims())) {
      if (dim.getAxes().empty())
        continue;
      OutputCollective c{false, ReductionKind::Sum, {}, output, bytes()};
      int64_t count = 1;
      for (StringAttr a : dim.getAxes()) {
        c.axes.push_back(a.getValue().str());
        count *= axisSize.lookup(a.getValue());
      }
      out.push_back(std::move(c));
      shape[d] = shape[d] * count - dim.getPad();
    }
  }
  return out;
}
