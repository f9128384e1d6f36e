//===- GeminiArena.cpp - the arena of a step with Gemini's fetches --------===//
//
// GeminiArena.h. The rules are lib/Export/MemoryReport.cpp's (the
// exporter's), applied to the step as it will be once the fetches are in:
// a fetch's copy lives from the fetch to its own last reader; a weight
// whose readers read copies is read by its fetches, update and assign only.
//
//===----------------------------------------------------------------------===//

#include "GeminiArena.h"

#include "dialects/tessel/TesselOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tessel::gemini {

int64_t bytesOf(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  if (!tensor)
    return 0;
  return tensor.getNumElements() *
         std::max<int64_t>(tensor.getElementTypeBitWidth() / 8, 1);
}

std::vector<::tessel::runtime::BufferLifetime>
arenaBuffers(Block &block, const DenseMap<Operation *, int64_t> &pos, int64_t n,
             const Moves &moves) {
  struct Range {
    int64_t bytes, first, last;
  };
  const int64_t end = 2 * n + 2;
  auto time = [&](Operation *op) {
    return isa<func::ReturnOp>(op) ? end : 2 * pos.lookup(op) + 1;
  };
  std::vector<Range> ranges;
  DenseMap<Value, size_t> rangeOf;
  auto use = [&](Value v, int64_t at) {
    auto it = rangeOf.find(v);
    if (it != rangeOf.end())
      ranges[it->second].last = std::max(ranges[it->second].last, at);
  };
  for (BlockArgument arg : block.getArguments()) {
    rangeOf[arg] = ranges.size();
    ranges.push_back({bytesOf(arg.getType()), -1, end});
  }
  for (Operation &op : block) {
    const int64_t at = time(&op);
    if (auto it = moves.before.find(pos.lookup(&op)); it != moves.before.end())
      for (auto [bytes, last] : it->second)
        ranges.push_back({bytes, at - 1, last < 0 ? at - 1 : 2 * last + 1});
    if (isa<WeightOp, ConstantOp>(op))
      continue;
    for (Value v : op.getOperands())
      use(v, at);
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (Value v : ret.getOperands())
        use(v, end);
      continue;
    }
    if (auto a = dyn_cast<AssignOp>(op)) {
      // Copied into the weight's state after the weight's last reader.
      int64_t copy = at;
      Operation *w = a.getWeight().getDefiningOp();
      auto fetched = moves.weightFetches.find(w);
      for (Operation *user : a.getWeight().getUsers())
        if (fetched == moves.weightFetches.end() ||
            isa<AdamUpdateOp, SgdUpdateOp, AssignOp, func::ReturnOp>(user))
          copy = std::max(copy, time(user));
      if (fetched != moves.weightFetches.end())
        for (int64_t f : fetched->second)
          copy = std::max(copy, 2 * f);
      use(a.getValue(), copy);
      continue;
    }
    if (auto sc = dyn_cast<ShardConstraintOp>(op)) {
      if (auto it = rangeOf.find(sc.getInput()); it != rangeOf.end())
        rangeOf[sc.getResult()] = it->second;
      continue;
    }
    const bool bucket =
        isa<AllReduceOp>(op) && op.hasAttr(TesselDialect::kBucketAttrName);
    if (bucket && op.getOperand(0).hasOneUse() &&
        rangeOf.count(op.getOperand(0))) {
      rangeOf[op.getResult(0)] = rangeOf.lookup(op.getOperand(0));
    } else {
      for (Value r : op.getResults()) {
        rangeOf[r] = ranges.size();
        ranges.push_back({bytesOf(r.getType()), at, at});
      }
    }
    if (bucket) {
      int64_t wait = end;
      for (Operation *user : op.getResult(0).getUsers())
        wait = std::min(wait, time(user));
      use(op.getOperand(0), wait);
      use(op.getResult(0), wait);
    }
  }
  std::vector<::tessel::runtime::BufferLifetime> out;
  for (const Range &r : ranges)
    out.push_back({static_cast<uint64_t>(r.bytes), r.first, r.last});
  return out;
}

int64_t arenaOf(const std::vector<::tessel::runtime::BufferLifetime> &b) {
  return static_cast<int64_t>(::tessel::runtime::planBuffers(b, 64).arenaSize);
}

} // namespace mlir::tessel::gemini
