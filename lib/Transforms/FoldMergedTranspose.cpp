//===- FoldMergedTranspose.cpp - a transpose between merge and split ------===//
//
// PyTorch's default exporter (torchlib's scaled_dot_product_attention)
// transposes attention's keys as
//   y = reshape(x : [b, h, s, d] -> [b*h, s, d])
//   z = transpose(y, [0, 2, 1])
//   w = reshape(z -> [b, h, d, s])
// The merged [b*h] dim holds the heads after the batch, so under tensor
// parallelism (heads split, batch whole) the heads cannot stay split through
// it: a shard is a contiguous block of a dim (docs/propagation.md), and the
// partitioner gathers the keys over tp to transpose all heads on every rank.
// The three ops are one transpose of x's last two dims followed by the
// reshape to w's shape (none when the shapes agree): the leading dims are
// merged and split back without the last two moving, so each element keeps
// its place. After this fold the heads stay split through attention.
//
//===----------------------------------------------------------------------===//

#include "FusePatterns.h"
#include "tessel/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_FOLDMERGEDTRANSPOSEPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

/// Whether `perm` swaps the last two dims and keeps every other.
bool swapsLastTwo(ArrayRef<int64_t> perm) {
  int64_t n = perm.size();
  if (n < 2 || perm[n - 2] != n - 1 || perm[n - 1] != n - 2)
    return false;
  for (int64_t i = 0; i + 2 < n; ++i)
    if (perm[i] != i)
      return false;
  return true;
}

/// Whether `a` and `b` are static shapes of rank >= 2 with the same last two
/// dims (a reshape between them merges or splits the leading dims only).
bool sameLastTwo(RankedTensorType a, RankedTensorType b) {
  if (!a || !b || !a.hasStaticShape() || !b.hasStaticShape() ||
      a.getRank() < 2 || b.getRank() < 2)
    return false;
  return a.getShape().take_back(2) == b.getShape().take_back(2);
}

struct FoldMergedTransposePass
    : impl::FoldMergedTransposePassBase<FoldMergedTransposePass> {
  void runOnOperation() final {
    SmallVector<TransposeOp> transposes;
    getOperation()->walk([&](TransposeOp t) { transposes.push_back(t); });
    bool changed = false;
    for (TransposeOp t : transposes) {
      auto merge = t.getInput().getDefiningOp<ReshapeOp>();
      if (!merge || !swapsLastTwo(t.getPerm()) || !t->hasOneUse())
        continue;
      auto split = dyn_cast<ReshapeOp>(*t->getUsers().begin());
      auto x = dyn_cast<RankedTensorType>(merge.getInput().getType());
      auto y = dyn_cast<RankedTensorType>(merge.getType());
      auto z = dyn_cast<RankedTensorType>(t.getType());
      if (!split || !sameLastTwo(x, y) ||
          !sameLastTwo(z, dyn_cast<RankedTensorType>(split.getType())) ||
          x.getRank() == y.getRank() /* nothing merged */)
        continue;
      OpBuilder b(split);
      // Each new op keeps the ONNX node name of the op it stands for.
      SmallVector<int64_t> perm;
      for (int64_t i = 0; i < x.getRank(); ++i)
        perm.push_back(i);
      std::swap(perm[x.getRank() - 2], perm[x.getRank() - 1]);
      Value v = TransposeOp::create(b, t.getLoc(), merge.getInput(), perm);
      if (cast<RankedTensorType>(v.getType()) != split.getType())
        v = ReshapeOp::create(b, split.getLoc(), split.getType(), v);
      split.getResult().replaceAllUsesWith(v);
      changed = true;
    }
    if (changed)
      eraseDeadOps<ReshapeOp, TransposeOp>(getOperation());
  }
};

} // namespace
} // namespace mlir::tessel
