//===- ParameterReport.cpp - which weights train, for --report ------------===//

#include "tessel/Export/Reports.h"
#include "dialects/tessel/TesselOps.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"

namespace mlir::tessel {

void printParameterReport(ModuleOp module, llvm::raw_ostream &os) {
  auto classes = module->getAttrOfType<DictionaryAttr>(
      TesselDialect::kParameterClassesAttrName);
  if (!classes)
    return;
  // Each weight's type, from its first read.
  llvm::StringMap<RankedTensorType> types;
  module.walk([&](WeightOp w) { types.try_emplace(w.getName(), w.getType()); });
  struct Row {
    std::string name, reason;
    int64_t elements = 0, bytes = 0;
  };
  std::vector<Row> rows[2]; // frozen, trainable
  int64_t elements[2] = {0, 0}, bytes[2] = {0, 0};
  for (NamedAttribute entry : classes) {
    auto v = dyn_cast<ArrayAttr>(entry.getValue());
    if (!v || v.size() != 2)
      continue;
    bool trainable = cast<BoolAttr>(v[0]).getValue();
    Row r{entry.getName().str(), cast<StringAttr>(v[1]).getValue().str()};
    if (auto t = types.lookup(entry.getName().getValue())) {
      r.elements = t.getNumElements();
      r.bytes = r.elements *
                std::max<int64_t>(1, t.getElementTypeBitWidth() / 8);
    }
    elements[trainable] += r.elements;
    bytes[trainable] += r.bytes;
    rows[trainable].push_back(std::move(r));
  }
  for (int trainable : {1, 0}) {
    os << (trainable ? "trainable" : "frozen") << " tensors: "
       << rows[trainable].size() << ", " << elements[trainable]
       << " elements, " << bytes[trainable] << " bytes\n";
    for (const Row &r : rows[trainable])
      os << "  " << r.name << "  " << r.elements << "  " << r.reason << "\n";
  }
}

} // namespace mlir::tessel
