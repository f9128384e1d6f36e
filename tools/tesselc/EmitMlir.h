//===- EmitMlir.h - tesselc --emit=mlir -------------------------*- C++ -*-===//

#ifndef TESSEL_TOOLS_TESSELC_EMITMLIR_H
#define TESSEL_TOOLS_TESSELC_EMITMLIR_H

#include "llvm/Support/CommandLine.h"

namespace tessel {

/// The options of the import phase, for --help grouping.
llvm::cl::OptionCategory &getImportCategory();

/// Imports the ONNX model at `inputPath` and writes the tessel module to
/// `outputPath` ("-": stdout). Returns the process exit code; errors go to
/// stderr as "tesselc: error: ...".
int emitMlir(llvm::StringRef inputPath, llvm::StringRef outputPath);

} // namespace tessel

#endif // TESSEL_TOOLS_TESSELC_EMITMLIR_H
