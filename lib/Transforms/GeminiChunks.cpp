//===- GeminiChunks.cpp - Gemini: parameters packed into chunks -----------===//
//
// tesselc --plugin gemini (docs/plugins.md#gemini). On the partitioned step
// (per-parameter blocks over dp, as -tessel-zero stage 3 leaves them), the
// parameters in program order of their first reader are packed into chunks
// of at most chunk-bytes bytes of this rank's blocks, as Gemini's
// ChunkManager packs them in order of registration; one larger than a chunk
// gets a chunk of its own. A parameter and its optimizer state carry the
// chunk's index (tessel.chunk), which -tessel-gemini-placement places.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselOps.h"
#include "tessel/Lifetimes/BufferLifetimes.h"
#include "tessel/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_GEMINICHUNKSPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

struct GeminiChunksPass : impl::GeminiChunksPassBase<GeminiChunksPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (chunkBytes <= 0) {
      module.emitError() << "tessel-gemini-chunks: chunk-bytes must be > 0 "
                            "(got "
                         << int64_t(chunkBytes) << ")";
      return signalPassFailure();
    }
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal() && fn.getBody().hasOneBlock())
        pack(fn.getBody().front());
  }

  void pack(Block &block) {
    DenseMap<Operation *, int64_t> pos;
    int64_t i = 0;
    for (Operation &op : block)
      pos[&op] = i++;
    // Each trained parameter (operand 0 of an update) with its states.
    struct Param {
      WeightOp weight;
      int64_t firstUse;
      SmallVector<WeightOp> states;
    };
    SmallVector<Param> params;
    DenseMap<Operation *, size_t> index;
    for (Operation &op : block) {
      if (!isa<AdamUpdateOp, SgdUpdateOp>(op))
        continue;
      auto w = op.getOperand(0).getDefiningOp<WeightOp>();
      if (!w || index.count(w))
        continue;
      int64_t first = pos.lookup(&op);
      for (Operation *user : w->getUsers())
        if (Operation *top = block.findAncestorOpInBlock(*user))
          first = std::min(first, pos.lookup(top));
      Param p{w, first, {}};
      for (Value state : op.getOperands().drop_front(2))
        if (auto s = state.getDefiningOp<WeightOp>();
            s && s.getZeros() && s.getType() == w.getType())
          p.states.push_back(s);
      index[w] = params.size();
      params.push_back(std::move(p));
    }
    llvm::stable_sort(params, [](const Param &a, const Param &b) {
      return a.firstUse < b.firstUse;
    });
    Builder b(block.getParentOp()->getContext());
    int64_t chunk = -1, used = 0;
    for (Param &p : params) {
      int64_t bytes = tensorBytes(p.weight.getType());
      if (chunk < 0 || used + bytes > chunkBytes) {
        ++chunk;
        used = 0;
      }
      used += bytes;
      IntegerAttr attr = b.getI64IntegerAttr(chunk);
      p.weight->setAttr(TesselDialect::kChunkAttrName, attr);
      for (WeightOp s : p.states)
        s->setAttr(TesselDialect::kChunkAttrName, attr);
    }
  }
};

} // namespace
} // namespace mlir::tessel
