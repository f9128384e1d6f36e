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

#include "tessel/Export/Reports.h"

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
  /// Its moves in program order: (fetch, evict) instructions.
  std::vector<std::pair<int64_t, int64_t>> moves;
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
  Operation *lossDef = lossOp(module);

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
    chunks[static_cast<int64_t>(fetch.getChunk())].moves.push_back({at, last});
  }
  for (auto &[c, info] : chunks)
    llvm::sort(info.moves);

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
  os << "  placement over the step (instructions of the step";
  if (lossDef)
    os << ", the loss at " << pos.lookup(lossDef);
  os << "; a move fetches a host chunk into device memory before its "
        "readers and evicts the copy after the last; the update runs where "
        "the chunk lives):\n";
  os << llvm::format("  %-6s %-7s %s\n", "chunk", "where",
                     "moves (fetch-evict)");
  for (auto &[c, info] : chunks) {
    std::string moves;
    for (auto [fetch, evict] : info.moves)
      moves += (moves.empty() ? "" : " ") + std::to_string(fetch) + "-" +
               std::to_string(evict);
    if (moves.empty())
      moves = whereOf(c) == "device" ? "none" : "none (not read)";
    os << llvm::format("  %-6lld %-7s %s\n", (long long)c,
                       whereOf(c).str().c_str(), moves.c_str());
  }
  const int64_t arena = planMemory(module).arena;
  const int64_t peak = resident + arena;
  os << "  planned device peak: " << peak << " bytes (resident chunks "
     << resident << " + arena " << arena << ")";
  // The placement pass planned the same arena; say so when it did not.
  if (auto planned = plan.getAs<IntegerAttr>("arena");
      planned && planned.getInt() != arena)
    os << " [the placement planned an arena of " << planned.getInt()
       << " bytes]";
  if (limit)
    os << ", limit " << limit
       << " bytes: " << (peak <= limit ? "within" : "ABOVE THE LIMIT");
  os << "\n";
}
