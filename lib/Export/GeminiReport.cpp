//===- GeminiReport.cpp - Gemini's chunks and their placement -------------===//
//
// Read back from the placed step itself: the chunks from their parameters'
// tessel.chunk marks, the moves from the tessel.chunk_fetch ops (a fetch's
// instruction, and its copies' last reader: the eviction), the device peak
// as the resident chunks' bytes plus the arena that planMemory lays out
// over the final program (as the exporter will), beside the limit that
// -tessel-gemini-placement recorded on the module.
//
//===----------------------------------------------------------------------===//

#include "tessel/Export/GeminiReport.h"

#include "dialects/tessel/TesselOps.h"
#include "tessel/Export/MemoryReport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Format.h"

#include <map>

using namespace mlir;
using namespace mlir::tessel;

namespace {

struct ChunkInfo {
  std::vector<std::string> params;
  int64_t bytes = 0, stateBytes = 0;
  /// Per phase (forward, backward): "fetch I evict J" moves.
  std::string moves[2];
};

} // namespace

void mlir::tessel::printGeminiReport(ModuleOp module, llvm::raw_ostream &os) {
  auto plan =
      module->getAttrOfType<DictionaryAttr>(TesselDialect::kGeminiPlanAttrName);
  func::FuncOp fn;
  for (auto f : module.getOps<func::FuncOp>())
    if (!f.isExternal() && !f.isPrivate() && f.getBody().hasOneBlock())
      fn = f;
  if (!plan || !fn)
    return;
  Block &block = fn.getBody().front();
  DenseMap<Operation *, int64_t> pos;
  int64_t n = 0;
  for (Operation &op : block)
    pos[&op] = n++;
  // The forward up to the loss, the backward (the updates interleaved)
  // after it.
  Operation *lossDef = lossOp(module);
  const int64_t loss = lossDef ? pos.lookup(lossDef) : n;
  auto phaseOf = [&](int64_t at) { return at <= loss ? 0 : 1; };

  std::map<int64_t, ChunkInfo> chunks;
  for (auto w : block.getOps<WeightOp>())
    if (auto c = w->getAttrOfType<IntegerAttr>(TesselDialect::kChunkAttrName)) {
      ChunkInfo &info = chunks[c.getInt()];
      if (w.getZeros()) {
        info.stateBytes += tensorBytes(w.getType());
      } else {
        info.params.push_back(w.getName().str());
        info.bytes += tensorBytes(w.getType());
      }
    }
  for (auto fetch : block.getOps<ChunkFetchOp>()) {
    int64_t at = pos.lookup(fetch), last = at;
    for (Value copy : fetch.getResults())
      for (Operation *user : copy.getUsers())
        if (Operation *top = block.findAncestorOpInBlock(*user))
          last = std::max(last, pos.lookup(top));
    std::string &moves =
        chunks[static_cast<int64_t>(fetch.getChunk())].moves[phaseOf(at)];
    moves += (moves.empty() ? "" : ", ") + ("fetch " + std::to_string(at)) +
             " evict " + std::to_string(last);
  }

  auto placement = plan.getAs<ArrayAttr>("placement");
  auto whereOf = [&](int64_t c) -> StringRef {
    if (placement && c < static_cast<int64_t>(placement.size()))
      if (auto s = dyn_cast<StringAttr>(placement[c]))
        return s.getValue();
    return "?";
  };
  int64_t limit = 0, resident = 0;
  if (auto l = plan.getAs<IntegerAttr>("limit"))
    limit = l.getInt();
  int64_t largest = 0;
  for (auto &[c, info] : chunks) {
    largest = std::max(largest, info.bytes);
    if (whereOf(c) == "device")
      resident += info.bytes + info.stateBytes;
  }
  os << "gemini: " << chunks.size() << " chunks (largest " << largest
     << " bytes of parameters), device memory limit ";
  if (limit)
    os << limit << " bytes per rank\n";
  else
    os << "none (every chunk in device memory)\n";
  for (auto &[c, info] : chunks) {
    os << "  chunk " << c << ": " << info.bytes << " bytes, "
       << info.params.size() << " param" << (info.params.size() == 1 ? "" : "s")
       << ", optimizer state " << info.stateBytes << " bytes:";
    for (const std::string &p : info.params)
      os << " " << p;
    os << "\n";
  }
  os << "  placement over the step (at instructions of the step: a fetch "
        "copies a host chunk into device memory, the copy is evicted after "
        "its last reader; the update runs where the chunk lives):\n";
  os << llvm::format("  %-6s %-7s %-26s %-26s %s\n", "chunk", "where",
                     "forward", "backward", "update");
  for (auto &[c, info] : chunks) {
    StringRef where = whereOf(c);
    std::string cells[2];
    for (int p = 0; p < 2; ++p)
      cells[p] = where == "device"        ? "device"
                 : !info.moves[p].empty() ? info.moves[p]
                                          : "host (not read)";
    os << llvm::format("  %-6lld %-7s %-26s %-26s %s\n", (long long)c,
                       where.str().c_str(), cells[0].c_str(), cells[1].c_str(),
                       where.str().c_str());
  }
  const int64_t arena = planMemory(module).arena;
  const int64_t peak = resident + arena;
  os << "  planned device peak: " << peak << " bytes (resident chunks "
     << resident << " + arena " << arena << ")";
  if (limit)
    os << ", limit " << limit
       << " bytes: " << (peak <= limit ? "within" : "ABOVE THE LIMIT");
  os << "\n";
}
