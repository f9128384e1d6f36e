//===- MemoryReport.cpp - what a training step keeps in memory ------------===//
//
// The arena's buffers of the step and when each lives are
// tessel/Lifetimes/BufferLifetimes.h's (the rules Gemini's placement plans
// with too), laid out by the exporter's buffer planner; here they give the
// planned arena, what is live at its fullest instruction, and the weights'
// and constants' bytes beside it.
//
//===----------------------------------------------------------------------===//

#include "tessel/Export/MemoryReport.h"
#include "tessel/Export/Reports.h"

#include "dialects/tessel/TesselOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
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
  return fn ? lossOf(fn) : nullptr;
}

MemoryPlan mlir::tessel::planMemory(ModuleOp module) {
  func::FuncOp fn = entryOf(module);
  if (!fn)
    return MemoryPlan();
  return planMemory(fn, lossOp(module));
}

MemoryPlan mlir::tessel::planMemory(func::FuncOp fn, Operation *lossDef,
                                    bool planArena) {
  MemoryPlan plan;
  Block &block = fn.getBody().front();
  std::vector<Operation *> order;
  for (Operation &op : block)
    order.push_back(&op);
  const int64_t n = static_cast<int64_t>(order.size());
  // The loss's time (an op of the block); without a loss every computed
  // value counts as an activation.
  const int64_t loss =
      lossDef ? StepLifetimes::timeOf(llvm::find(order, lossDef) - order.begin())
              : -2;

  llvm::StringSet<> weights;
  for (Operation *op : order) {
    if (auto w = dyn_cast<WeightOp>(op)) {
      std::string key;
      llvm::raw_string_ostream ks(key);
      ks << w.getName() << ":" << w.getType();
      if (weights.insert(key).second)
        (w.getZeros() ? plan.optimizerState : plan.params) +=
            tensorBytes(w.getType());
    } else if (auto c = dyn_cast<ConstantOp>(op)) {
      plan.constants += tensorBytes(c.getType());
    }
  }

  // The arena's buffers (BufferLifetimes.h); those computed after the loss
  // are the backward's and the update's.
  const std::vector<::tessel::runtime::BufferLifetime> buffers =
      stepLifetimes(block).buffers;
  if (planArena)
    plan.arena = mlir::tessel::planArena(buffers);
  auto backward = [&](const ::tessel::runtime::BufferLifetime &b) {
    return loss >= -1 && b.firstUse > loss;
  };

  // Live bytes at each time, by kind: a sweep over the ranges' ends, the
  // changes at one time summed before the total is read.
  struct Delta {
    int64_t at, act, grad;
  };
  std::vector<Delta> delta;
  delta.reserve(2 * buffers.size());
  for (const auto &b : buffers) {
    const int64_t bytes = static_cast<int64_t>(b.size);
    int64_t act = backward(b) ? 0 : bytes, grad = backward(b) ? bytes : 0;
    delta.push_back({b.firstUse, act, grad});
    delta.push_back({b.lastUse + 1, -act, -grad});
  }
  llvm::sort(delta, [](const Delta &x, const Delta &y) { return x.at < y.at; });
  int64_t act = 0, grad = 0, best = -1;
  for (size_t i = 0; i < delta.size();) {
    const int64_t at = delta[i].at;
    for (; i < delta.size() && delta[i].at == at; ++i) {
      act += delta[i].act;
      grad += delta[i].grad;
    }
    if (act + grad > best) {
      best = act + grad;
      plan.activations = act;
      plan.grads = grad;
      plan.peakInstruction = StepLifetimes::instructionAt(at);
    }
  }
  // What the forward leaves alive for the backward (what --recompute cuts).
  if (loss >= -1)
    for (const auto &b : buffers)
      if (!backward(b) && b.firstUse <= loss && b.lastUse > loss)
        plan.keptForBackward += static_cast<int64_t>(b.size);
  if (!planArena) {
    plan.arena = plan.activations + plan.grads;
    plan.arenaPlanned = false;
  }
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
