//===- EraseDead.h - erase the ops a rewrite left unused --------*- C++ -*-===//
//
// Pattern passes (-tessel-fuse-gelu, -tessel-fuse-layer-norm) replace a
// decomposition with one op and leave the decomposition's ops unread; this
// erases those of the given kinds, repeatedly, until none is left.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_LIB_TRANSFORMS_ERASEDEAD_H
#define TESSEL_LIB_TRANSFORMS_ERASEDEAD_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::tessel {

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

#endif // TESSEL_LIB_TRANSFORMS_ERASEDEAD_H
