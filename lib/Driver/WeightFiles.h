//===- WeightFiles.h - tesselc --weights: weights without a graph -*- C++ -*-===//
//
// The weights of a .mlir input can come from a .safetensors or an .npz
// file: tensors by name, checked against the program's tessel.weight ops (dtype and shape)
// before they are used.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLS_TESSELC_WEIGHTFILES_H
#define TESSEL_TOOLS_TESSELC_WEIGHTFILES_H

#include "tessel/Import/WeightTable.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <memory>

namespace tessel {

/// Reads the tensors of a .safetensors file (its header checked against the
/// file's size before anything is read).
llvm::Expected<std::unique_ptr<mlir::tessel::WeightTable>>
readSafetensorsWeights(llvm::StringRef path);

/// Reads the arrays of an .npz file (np.savez: a zip of NAME.npy, stored
/// uncompressed) as tensors named NAME.
llvm::Expected<std::unique_ptr<mlir::tessel::WeightTable>>
readNpzWeights(llvm::StringRef path);

/// Checks that every tessel.weight of `module` is in `table` with its
/// element type and shape; the error names the weight, what the program
/// wants and what `from` holds.
llvm::Error checkWeights(mlir::ModuleOp module,
                         const mlir::tessel::WeightTable &table,
                         llvm::StringRef from);

} // namespace tessel

#endif // TESSEL_TOOLS_TESSELC_WEIGHTFILES_H
