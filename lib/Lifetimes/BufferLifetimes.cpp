//===- BufferLifetimes.cpp - when each buffer of a step lives -------------===//
//
// BufferLifetimes.h. One walk over the step in program order: each op's
// operands extend their buffers to it, its results get buffers of their
// own (or share one, for the aliasing ops), and the ops whose effect
// outlasts them (assigns, asynchronous collectives) extend what they read
// to where that effect ends.
//
//===----------------------------------------------------------------------===//

#include "tessel/Lifetimes/BufferLifetimes.h"

#include "dialects/tessel/TesselOps.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>

namespace mlir::tessel {

int64_t tensorBytes(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  if (!tensor)
    return 0;
  int64_t bits = tensor.getElementTypeBitWidth();
  return tensor.getNumElements() * std::max<int64_t>(bits / 8, 1);
}

Operation *lossOf(func::FuncOp fn) {
  if (fn.isExternal() || !fn.getBody().hasOneBlock())
    return nullptr;
  auto names = fn->getAttrOfType<ArrayAttr>(TesselDialect::kOutputNamesAttrName);
  Operation *ret = fn.getBody().front().getTerminator();
  if (names && ret)
    for (auto [i, n] : llvm::enumerate(names))
      if (auto s = dyn_cast<StringAttr>(n);
          s && s.getValue() == "loss" && i < ret->getNumOperands())
        return ret->getOperand(i).getDefiningOp();
  return nullptr;
}

LifetimeHook::~LifetimeHook() = default;
void LifetimeHook::insertedBefore(int64_t, SmallVectorImpl<Inserted> &) const {}
bool LifetimeHook::readsWeight(Operation *, Operation *) const { return true; }
void LifetimeHook::weightReadsBefore(Operation *,
                                     SmallVectorImpl<int64_t> &) const {}

StepLifetimes stepLifetimes(Block &block, const LifetimeHook *hook) {
  static const LifetimeHook none;
  if (!hook)
    hook = &none;
  StepLifetimes out;
  DenseMap<Operation *, int64_t> pos;
  for (Operation &op : block)
    pos[&op] = out.instructions++;
  const int64_t end = out.end();
  auto time = [&](Operation *op) {
    return StepLifetimes::timeOf(pos.lookup(op));
  };
  std::vector<::tessel::runtime::BufferLifetime> &buffers = out.buffers;
  DenseMap<Value, size_t> bufferOf;
  auto use = [&](Value v, int64_t at) {
    auto it = bufferOf.find(v);
    if (it != bufferOf.end())
      buffers[it->second].lastUse = std::max(buffers[it->second].lastUse, at);
  };
  auto add = [&](int64_t bytes, int64_t first, int64_t last) {
    buffers.push_back({static_cast<uint64_t>(bytes), first, last});
    return buffers.size() - 1;
  };
  for (BlockArgument arg : block.getArguments())
    bufferOf[arg] = add(tensorBytes(arg.getType()), -1, end);

  SmallVector<LifetimeHook::Inserted> inserted;
  SmallVector<int64_t> weightReads;
  for (Operation &op : block) {
    const int64_t i = pos.lookup(&op), at = StepLifetimes::timeOf(i);
    inserted.clear();
    hook->insertedBefore(i, inserted);
    for (const LifetimeHook::Inserted &b : inserted)
      add(b.bytes, at - 1,
          b.lastReader < 0 ? at - 1 : StepLifetimes::timeOf(b.lastReader));
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
      for (Operation *user : a.getWeight().getUsers()) {
        if (!hook->readsWeight(w, user))
          continue;
        copy = std::max(copy, isa<func::ReturnOp>(user) ? end : time(user));
        // A prefetched gather reads the weight until its wait, right
        // before its first use.
        if (isa<AllGatherOp>(user) &&
            user->hasAttr(TesselDialect::kAsyncAttrName))
          for (Operation *reader : user->getUsers())
            if (pos.count(reader))
              copy = std::max(copy, time(reader));
      }
      weightReads.clear();
      hook->weightReadsBefore(w, weightReads);
      for (int64_t f : weightReads)
        copy = std::max(copy, StepLifetimes::timeOf(f) - 1);
      use(a.getValue(), copy);
      continue;
    }
    if (auto sc = dyn_cast<ShardConstraintOp>(op)) {
      if (auto it = bufferOf.find(sc.getInput()); it != bufferOf.end())
        bufferOf[sc.getResult()] = it->second;
      continue;
    }
    const bool bucket =
        isa<AllReduceOp>(op) && op.hasAttr(TesselDialect::kBucketAttrName);
    if (bucket && op.getOperand(0).hasOneUse() &&
        bufferOf.count(op.getOperand(0))) {
      // In place on the concatenated bucket, as the exporter writes it.
      bufferOf[op.getResult(0)] = bufferOf.lookup(op.getOperand(0));
    } else {
      for (Value r : op.getResults())
        bufferOf[r] = add(tensorBytes(r.getType()), at, at);
    }
    // An asynchronous all_reduce or reduce_scatter reads its operand until
    // its wait, before the first use of its result.
    if (bucket || (isa<ReduceScatterOp>(op) &&
                   op.hasAttr(TesselDialect::kAsyncAttrName))) {
      int64_t wait = end;
      for (Operation *user : op.getResult(0).getUsers())
        wait = std::min(wait, time(user));
      use(op.getOperand(0), wait);
      use(op.getResult(0), wait);
    }
  }
  return out;
}

int64_t planArena(const std::vector<::tessel::runtime::BufferLifetime> &b) {
  // Saturated: an arena past int64 (or no plan, kNoArena) is INT64_MAX.
  const uint64_t arena = ::tessel::runtime::planBuffers(b, 64).arenaSize;
  return arena > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(arena);
}

} // namespace mlir::tessel
