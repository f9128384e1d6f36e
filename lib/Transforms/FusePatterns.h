//===- FusePatterns.h - erase the ops a rewrite left unused --------*- C++ -*-===//
//
// Pattern passes (-tessel-fuse-gelu, -tessel-fuse-layer-norm) replace a
// decomposition with one op and leave the decomposition's ops unread; this
// erases those of the given kinds, repeatedly, until none is left.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_LIB_TRANSFORMS_FUSEPATTERNS_H
#define TESSEL_LIB_TRANSFORMS_FUSEPATTERNS_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::tessel {

/// Calls `match(a, b)` with the operands of `v`'s defining OpTy in both
/// orders; true when one matched (false when `v` is not an OpTy's).
template <typename OpTy>
bool either(Value v, llvm::function_ref<bool(Value, Value)> match) {
  auto op = v.getDefiningOp<OpTy>();
  if (!op)
    return false;
  Value a = op->getOperand(0), b = op->getOperand(1);
  return match(a, b) || match(b, a);
}

/// Erases every op of kinds `OpTys` under `root` whose results nothing
/// reads, then those that only they read, and so on.
template <typename... OpTys>
void eraseDeadOps(Operation *root) {
  bool erased = true;
  while (erased) {
    SmallVector<Operation *> dead;
    root->walk([&](Operation *op) {
      if (isa<OpTys...>(op) && op->use_empty())
        dead.push_back(op);
    });
    for (Operation *op : dead)
      op->erase();
    erased = !dead.empty();
  }
}

} // namespace mlir::tessel

#endif // TESSEL_LIB_TRANSFORMS_FUSEPATTERNS_H
