//===- SourceModel.h - The ONNX model a trained one is written into -*- C++ -*-===//
//
// `tesselc --train` keeps the source ONNX model in the artifact without the
// tensors training changes, so that `tessel-run --export-onnx` writes the
// trained model by appending them (docs/training.md).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_IMPORT_SOURCEMODEL_H
#define TESSEL_IMPORT_SOURCEMODEL_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Error.h"

namespace mlir::tessel {

/// Initializers the importer read as another weight (tessel.tied_copies):
/// copy -> (that weight, "", "transposed" or "expand").
using TiedCopies = llvm::StringMap<std::pair<std::string, std::string>>;

/// Writes the ONNX model at `modelPath` to `outPath` without the tensors
/// named in `trained`: their initializers removed, and each node that
/// produced one (the Identity of a shared initializer, a subgraph of
/// constants folded at import) removed, so that appending an initializer of
/// that name gives a valid model. A remaining initializer in external data
/// is read into the model (the location confined to the model's folder, as
/// the importer does; at most 1 GiB in all). Fails naming the tensor when a
/// node that makes one also makes another output, or its external data is
/// refused. Each copy in `tiedCopies` of a trained tensor becomes a node
/// (Identity, Transpose or Expand) that computes it from that tensor; the
/// Gemms whose zero bias the exporter dropped read the restored bias again.
llvm::Error writeSourceModel(llvm::StringRef modelPath,
                             const llvm::StringSet<> &trained,
                             const TiedCopies &tiedCopies,
                             llvm::StringRef outPath);

} // namespace mlir::tessel

#endif // TESSEL_IMPORT_SOURCEMODEL_H
