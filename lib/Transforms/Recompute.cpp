//===- Recompute.cpp - activation checkpointing per layer -----------------===//
//
// After -tessel-autodiff: each layer's internal activations, which the
// backward reads, are recomputed right before the backward needs them
// instead of being kept from the forward. See the pass description in
// Passes.td and docs/training.md.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselOps.h"
#include "tessel/Plan/Plan.h"
#include "tessel/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_RECOMPUTEPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

/// `<word>.<number>`: a layer's path segment (`h.0`, `layers.12`).
bool isLayerSegment(StringRef seg) {
  auto [word, number] = seg.rsplit('.');
  if (word.empty() || number.empty() || word.size() == seg.size())
    return false;
  return llvm::all_of(number, llvm::isDigit) &&
         llvm::all_of(word, [](char c) {
           return llvm::isAlnum(c) || c == '_' || c == '-';
         });
}

/// The layer of an ONNX node name: the name up to and including its first
/// directory segment of the form `<word>.<number>` ("/h.3/attn/MatMul" ->
/// "/h.3/"); "" for none.
StringRef layerOfNodeName(StringRef name) {
  size_t start = 0;
  while (start < name.size()) {
    size_t end = name.find('/', start);
    if (end == StringRef::npos)
      return ""; // the last segment names the node, not a directory
    if (isLayerSegment(name.slice(start, end)))
      return name.take_front(end + 1);
    start = end + 1;
  }
  return "";
}

struct RecomputePass : impl::RecomputePassBase<RecomputePass> {
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      auto grads = fn->getAttrOfType<ArrayAttr>(TesselDialect::kGradientsAttrName);
      if (fn.isExternal() || !grads || !fn.getBody().hasOneBlock())
        continue;
      unsigned nResults = fn.getNumResults();
      if (grads.size() >= nResults)
        continue;
      auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
      Value loss = ret.getOperand(nResults - grads.size() - 1);
      if (Operation *def = loss.getDefiningOp())
        runOn(fn.getBody().front(), def);
    }
  }

  void runOn(Block &block, Operation *lossDef) {
    DenseMap<Operation *, int64_t> pos;
    for (Operation &op : block)
      pos[&op] = static_cast<int64_t>(pos.size());
    const int64_t lossPos = pos.lookup(lossDef);
    auto isBackward = [&](Operation *op) {
      auto it = pos.find(op);
      return it != pos.end() && it->second > lossPos;
    };

    // Forward ops by layer, in program order.
    llvm::MapVector<StringRef, SmallVector<Operation *>> layers;
    for (Operation &op : block) {
      if (pos.lookup(&op) > lossPos)
        break;
      if (isa<WeightOp, ConstantOp>(op) || op.getNumResults() == 0 ||
          !isPure(&op))
        continue;
      StringRef layer = layerOfNodeName(nodeName(&op));
      if (!layer.empty())
        layers[layer].push_back(&op);
    }

    for (auto &[layer, ops] : layers) {
      DenseSet<Operation *> inLayer(ops.begin(), ops.end());
      // Kept: read by a forward op of another layer (the layer's outputs).
      auto kept = [&](Value v) {
        return llvm::any_of(v.getUsers(), [&](Operation *u) {
          return !isBackward(u) && !inLayer.contains(u);
        });
      };
      // What the backward reads that the layer does not keep.
      SmallVector<Value> recomputed;
      Operation *firstReader = nullptr;
      for (Operation *op : ops)
        for (Value r : op->getResults()) {
          if (kept(r))
            continue;
          bool read = false;
          for (Operation *u : r.getUsers())
            if (isBackward(u)) {
              read = true;
              if (!firstReader || pos.lookup(u) < pos.lookup(firstReader))
                firstReader = u;
            }
          if (read)
            recomputed.push_back(r);
        }
      if (recomputed.empty())
        continue;

      // The layer's ops those values need, from what it keeps.
      DenseSet<Operation *> needed;
      SmallVector<Operation *> work;
      for (Value v : recomputed)
        work.push_back(v.getDefiningOp());
      while (!work.empty()) {
        Operation *op = work.pop_back_val();
        if (!needed.insert(op).second)
          continue;
        for (Value in : op->getOperands()) {
          Operation *def = in.getDefiningOp();
          if (def && inLayer.contains(def) && !kept(in))
            work.push_back(def);
        }
      }

      OpBuilder b(firstReader);
      IRMapping map;
      for (Operation *op : ops)
        if (needed.contains(op))
          b.clone(*op, map);
      for (Value v : recomputed)
        v.replaceUsesWithIf(map.lookup(v), [&](OpOperand &use) {
          return isBackward(use.getOwner());
        });
    }
  }
};

} // namespace
} // namespace mlir::tessel
