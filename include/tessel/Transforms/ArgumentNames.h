//===- ArgumentNames.h - function arguments printed by name -----*- C++ -*-===//
//
// Printed IR names a function's arguments after their inputs: the importer
// gives each argument its ONNX input name as location (NameLoc), and a
// program parsed from text keeps the `%name` each argument was written with.
//
//   func.func @main(%input_ids: tensor<2x32xi64>) -> ...
//     %0 = tessel.gather %1[%input_ids] ...
//
// Op results stay numbered (their locations are ONNX node names, long and
// not what a reader looks for). MLIR's own --mlir-use-nameloc-as-prefix,
// given explicitly, names results by location too; with
// --mlir-print-debuginfo the names are the printed locations (`%arg0:
// tensor<...> loc("input_ids")`), since a result's location cannot be
// printed without also naming it. Names that are not SSA identifiers are
// sanitised and colliding ones suffixed by MLIR's printer: the text always
// parses back.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TRANSFORMS_ARGUMENTNAMES_H
#define TESSEL_TRANSFORMS_ARGUMENTNAMES_H

#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/SourceMgr.h"

#include <memory>

namespace mlir::tessel {

/// Gives each function argument of `root` that was written `%name` in the
/// text `sourceMgr` holds (and has no NameLoc yet) the location
/// NameLoc(name, its location). `%argN` for argument N, MLIR's default, is
/// left alone.
void nameArgumentsFromSource(Operation *root, llvm::SourceMgr &sourceMgr);

/// Whether printing with `flags` names the arguments only: neither
/// --mlir-print-debuginfo nor an explicit --mlir-use-nameloc-as-prefix.
bool printsArgumentNames(const OpPrintingFlags &flags);

/// Prints `root` as tesselc and tessel-opt do: arguments by name where
/// printsArgumentNames(flags), otherwise exactly as `flags` say. The ops'
/// locations are unchanged afterwards.
void printWithArgumentNames(Operation *root, llvm::raw_ostream &os,
                            OpPrintingFlags flags);

/// tessel-opt's pass after the user's pipeline: nameArgumentsFromSource
/// over the input text (`text`, called `bufferName`; it must outlive the
/// pass). The arguments' locations still point at their `%name` there.
std::unique_ptr<Pass> createNameArgumentsFromSourcePass(StringRef bufferName,
                                                        StringRef text);

/// tessel-opt's last pass when it prints arguments by name: drops the names
/// from op locations (which that printing does not show), so that
/// --mlir-use-nameloc-as-prefix names the arguments only.
std::unique_ptr<Pass> createForgetResultNamesPass();

} // namespace mlir::tessel

#endif // TESSEL_TRANSFORMS_ARGUMENTNAMES_H
