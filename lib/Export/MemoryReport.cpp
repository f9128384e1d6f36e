//===- MemoryReport.cpp - what a training step keeps in memory ------------===//
//
// The exporter gives every computed value a buffer of the arena, live from
// the instruction that writes it to the last that reads it (inputs the
// whole run, outputs and assigned values to its end; a gradient bucket's
// all_reduce keeps its operand until its wait), and the buffer planner lays
// them out. The same live ranges here, over the IR in program order, give
// the planned arena and what is live at its fullest instruction.
//
//===----------------------------------------------------------------------===//

#include "tessel/Export/MemoryReport.h"

#include "dialects/tessel/TesselOps.h"
#include "tessel/runtime/BufferPlanner.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"

#include <map>

using namespace mlir;
using namespace mlir::tessel;

namespace {

func::FuncOp entryOf(ModuleOp module) {
  for (auto fn : module.getOps<func::FuncOp>())
    if (!fn.isExternal() && !fn.isPrivate() && fn.getBody().hasOneBlock())
      return fn;
  return {};
}

std::string nameOf(Operation *op) {
  std::string what = op->getName().stripDialect().str();
  Location loc = op->getLoc();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    if (!fused.getLocations().empty())
      loc = fused.getLocations().front();
  if (auto n = dyn_cast<NameLoc>(loc))
    what += " '" + n.getName().str() + "'";
  return what;
}

} // namespace

Operation *mlir::tessel::lossOp(ModuleOp module) {
  func::FuncOp fn = entryOf(module);
  if (!fn)
    return nullptr;
  auto names = fn->getAttrOfType<ArrayAttr>(TesselDialect::kOutputNamesAttrName);
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  if (names)
    for (auto [i, n] : llvm::enumerate(names))
      if (auto s = dyn_cast<StringAttr>(n);
          s && s.getValue() == "loss" && i < ret.getNumOperands())
        return ret.getOperand(i).getDefiningOp();
  return nullptr;
}

int64_t mlir::tessel::tensorBytes(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  if (!tensor)
    return 0;
  int64_t bits = tensor.getElementTypeBitWidth();
  return tensor.getNumElements() * std::max<int64_t>(bits / 8, 1);
}

MemoryPlan mlir::tessel::planMemory(ModuleOp module) {
  func::FuncOp fn = entryOf(module);
  if (!fn)
    return MemoryPlan();
  return planMemory(fn, lossOp(module));
}

MemoryPlan mlir::tessel::planMemory(func::FuncOp fn, Operation *lossDef) {
  MemoryPlan plan;
  Block &block = fn.getBody().front();
  DenseMap<Operation *, int64_t> pos;
  std::vector<Operation *> order;
  for (Operation &op : block) {
    pos[&op] = static_cast<int64_t>(order.size());
    order.push_back(&op);
  }
  const int64_t n = static_cast<int64_t>(order.size());
  // Without a loss every computed value counts as an activation.
  const int64_t loss = lossDef ? pos.lookup(lossDef) : -2;

  // One buffer per computed value (aliases share their source's).
  struct Buffer {
    int64_t bytes = 0, first = 0, last = 0;
    bool backward = false;
  };
  std::vector<Buffer> buffers;
  DenseMap<Value, int> bufferOf;
  auto use = [&](Value v, int64_t at) {
    auto it = bufferOf.find(v);
    if (it != bufferOf.end())
      buffers[it->second].last = std::max(buffers[it->second].last, at);
  };
  for (BlockArgument arg : fn.getArguments()) {
    bufferOf[arg] = static_cast<int>(buffers.size());
    buffers.push_back({tensorBytes(arg.getType()), -1, n, false});
  }
  llvm::StringSet<> weights;
  for (Operation *op : order) {
    const int64_t at = pos.lookup(op);
    if (auto w = dyn_cast<WeightOp>(op)) {
      std::string key;
      llvm::raw_string_ostream ks(key);
      ks << w.getName() << ":" << w.getType();
      if (weights.insert(key).second)
        (w.getZeros() ? plan.optimizerState : plan.params) +=
            tensorBytes(w.getType());
      continue;
    }
    if (auto c = dyn_cast<ConstantOp>(op)) {
      plan.constants += tensorBytes(c.getType());
      continue;
    }
    for (Value v : op->getOperands())
      use(v, at);
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (Value v : ret.getOperands())
        use(v, n);
      continue;
    }
    if (auto a = dyn_cast<AssignOp>(op)) {
      // Copied into the weight's state after the weight's last reader.
      int64_t copy = at;
      for (Operation *user : a.getWeight().getUsers()) {
        copy = std::max(copy, isa<func::ReturnOp>(user) ? n : pos.lookup(user));
        // A prefetched gather reads the weight until its wait, right
        // before its first use.
        if (isa<AllGatherOp>(user) &&
            user->hasAttr(TesselDialect::kAsyncAttrName))
          for (Operation *use : user->getUsers())
            if (pos.count(use))
              copy = std::max(copy, pos.lookup(use));
      }
      use(a.getValue(), copy);
      continue;
    }
    if (auto sc = dyn_cast<ShardConstraintOp>(op)) {
      if (auto it = bufferOf.find(sc.getInput()); it != bufferOf.end())
        bufferOf[sc.getResult()] = it->second;
      continue;
    }
    const bool bucket =
        isa<AllReduceOp>(op) && op->hasAttr(TesselDialect::kBucketAttrName);
    if (bucket && op->getOperand(0).hasOneUse() &&
        bufferOf.count(op->getOperand(0))) {
      // In place on the concatenated bucket, as the exporter writes it.
      bufferOf[op->getResult(0)] = bufferOf.lookup(op->getOperand(0));
    } else {
      for (Value r : op->getResults()) {
        bufferOf[r] = static_cast<int>(buffers.size());
        buffers.push_back(
            {tensorBytes(r.getType()), at, at, loss >= -1 && at > loss});
      }
    }
    // An asynchronous all_reduce or reduce_scatter reads its operand until
    // its wait, before the first use of its result.
    if (bucket || (isa<ReduceScatterOp>(op) &&
                   op->hasAttr(TesselDialect::kAsyncAttrName))) {
      int64_t wait = n;
      for (Operation *user : op->getResult(0).getUsers())
        wait = std::min(wait, pos.lookup(user));
      use(op->getOperand(0), wait);
      use(op->getResult(0), wait);
    }
  }

  std::vector<::tessel::runtime::BufferLifetime> lifetimes;
  for (const Buffer &b : buffers)
    lifetimes.push_back({static_cast<uint64_t>(b.bytes), b.first, b.last});
  plan.arena = static_cast<int64_t>(
      ::tessel::runtime::planBuffers(lifetimes, 64).arenaSize);

  // Live bytes at each instruction, by kind: a sweep over the ranges.
  std::map<int64_t, std::pair<int64_t, int64_t>> delta; // at -> (act, grad)
  for (const Buffer &b : buffers) {
    int64_t act = b.backward ? 0 : b.bytes, grad = b.backward ? b.bytes : 0;
    delta[b.first].first += act;
    delta[b.first].second += grad;
    delta[b.last + 1].first -= act;
    delta[b.last + 1].second -= grad;
  }
  int64_t act = 0, grad = 0, best = -1;
  for (auto &[at, d] : delta) {
    act += d.first;
    grad += d.second;
    if (act + grad > best) {
      best = act + grad;
      plan.activations = act;
      plan.grads = grad;
      plan.peakInstruction = at;
    }
  }
  // What the forward leaves alive for the backward (what --recompute cuts).
  if (loss >= -1)
    for (const Buffer &b : buffers)
      if (!b.backward && b.first <= loss && b.last > loss)
        plan.keptForBackward += b.bytes;
  if (plan.peakInstruction >= 0 && plan.peakInstruction < n)
    plan.peakOp = nameOf(order[plan.peakInstruction]);
  return plan;
}

void mlir::tessel::printMemoryReport(ModuleOp module, llvm::raw_ostream &os) {
  MemoryPlan p = planMemory(module);
  auto mib = [](int64_t b) {
    std::string s;
    llvm::raw_string_ostream ss(s);
    ss << llvm::format("%.2f MiB", static_cast<double>(b) / (1 << 20));
    return s;
  };
  os << "memory report (per rank, planned): peak " << p.peak() << " bytes ("
     << mib(p.peak()) << ")\n";
  os << "  params: " << p.params << " bytes\n";
  os << "  optimizer state: " << p.optimizerState << " bytes\n";
  os << "  constants: " << p.constants << " bytes\n";
  os << "  arena: " << p.arena << " bytes (" << mib(p.arena)
     << ", the buffer planner's, for every value the step computes)\n";
  os << "  live at the fullest instruction (" << p.peakInstruction;
  if (!p.peakOp.empty())
    os << ", " << p.peakOp;
  os << "): activations " << p.activations << " bytes, grads " << p.grads
     << " bytes\n";
  if (lossOp(module))
    os << "  activations kept for the backward (live at its start): "
       << p.keptForBackward << " bytes (" << mib(p.keptForBackward) << ")\n";
}
