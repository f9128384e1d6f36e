//===- CollectiveReport.cpp - what a partitioned program sends ------------===//

#include "tessel/Export/CollectiveReport.h"
#include "tessel/Export/MemoryReport.h"

#include "dialects/tessel/TesselOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using namespace mlir::tessel;

namespace {
struct Entry {
  std::string what;
  std::string axes;
  int64_t bytes;
  // Training steps: 0 forward, 1 backward (and update); -1 otherwise.
  int section = -1;
};

std::string axesOf(ArrayAttr axes) {
  SmallVector<StringRef> names;
  for (Attribute a : axes)
    names.push_back(cast<StringAttr>(a).getValue());
  return "[" + llvm::join(names, ", ") + "]";
}
} // namespace

void mlir::tessel::printCollectiveReport(ModuleOp module, raw_ostream &os) {
  int64_t ranks = 1;
  std::string meshDesc = "one device";
  for (MeshOp mesh : module.getOps<MeshOp>()) {
    ranks = mesh.getNumDevices();
    meshDesc.clear();
    llvm::raw_string_ostream ms(meshDesc);
    for (auto [i, n, s] :
         llvm::enumerate(mesh.getAxisNames(), mesh.getAxisSizes()))
      ms << (i ? "," : "") << cast<StringAttr>(n).getValue() << "=" << s;
  }
  std::vector<Entry> entries;
  std::vector<int64_t> buckets;
  Operation *loss = lossOp(module);
  module.walk([&](Operation *op) {
    auto axes = op->getAttrOfType<ArrayAttr>("axes");
    if (!axes || !isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp,
                      CollectivePermuteOp, BroadcastOp, SendOp, RecvOp>(op))
      return;
    Type t = op->getNumOperands() ? op->getOperand(0).getType()
                                  : op->getResult(0).getType();
    std::string what = op->getName().stripDialect().str();
    if (auto ar = dyn_cast<AllReduceOp>(op))
      what += " " + stringifyReductionKind(ar.getKind()).str();
    if (auto rs = dyn_cast<ReduceScatterOp>(op))
      what += " " + stringifyReductionKind(rs.getKind()).str();
    if (auto bucket = op->getAttrOfType<IntegerAttr>(
            TesselDialect::kBucketAttrName)) {
      auto cat = op->getOperand(0).getDefiningOp<ConcatOp>();
      size_t n = cat ? cat.getInputs().size() : 1;
      what += " (bucket " + std::to_string(bucket.getInt()) + ": " +
              std::to_string(n) + " gradient" + (n == 1 ? "" : "s") + ")";
      buckets.push_back(tensorBytes(t));
    } else if (auto loc = dyn_cast<NameLoc>(op->getLoc())) {
      what += " (" + loc.getName().str() + ")";
    }
    int section = -1;
    if (loss && loss->getBlock() == op->getBlock())
      section = loss->isBeforeInBlock(op) ? 1 : 0;
    entries.push_back({what, axesOf(axes), tensorBytes(t), section});
  });
  int64_t perRank = 0;
  for (const Entry &e : entries)
    perRank += e.bytes;
  os << "collective report: mesh " << meshDesc << ", " << ranks << " rank"
     << (ranks == 1 ? "" : "s") << ", " << entries.size()
     << " collectives per rank\n";
  for (int64_t r = 0; r < ranks; ++r) {
    os << "rank " << r << ":\n";
    int section = -1;
    for (const Entry &e : entries) {
      if (e.section != section && e.section >= 0)
        os << (e.section ? "  backward:\n" : "  forward:\n");
      section = e.section;
      os << (section >= 0 ? "    " : "  ") << e.what << " over " << e.axes
         << ": " << e.bytes << " bytes\n";
    }
    os << "  total: " << perRank << " bytes\n";
  }
  os << "all ranks: " << perRank * ranks << " bytes in "
     << entries.size() * ranks << " collective calls\n";
  if (!buckets.empty()) {
    os << "gradient buckets: " << buckets.size() << " per rank, issued during "
          "the backward (bytes:";
    for (int64_t b : buckets)
      os << " " << b;
    os << ")\n";
  }
}
