//===- OnnxImportFuzzer.cpp - libFuzzer target for the ONNX importer ------===//
//
// The input is a serialized ONNX ModelProto; it goes through
// importOnnxBuffer (protobuf parse, opset and operator checks, libonnx's
// checker, every op importer, constant folding) and the module is verified,
// and through parseOnnxShardingAnnotations (--plan=onnx's reader of ONNX's
// multi-device annotations). External data resolves against an empty
// directory. Any crash, hang, leak
// or sanitizer report is a bug: the importer must answer every input with a
// module or an error message.
//
//===----------------------------------------------------------------------===//
#include "dialects/tessel/fuzz/FuzzContext.h"
#include "tessel/Import/OnnxImporter.h"
#include "tessel/Import/OnnxSharding.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"

#include <cstdint>
#include <string>

namespace {

/// A fresh directory of this process's own in the system temp folder
/// (TMPDIR), made once.
const std::string &emptyDir() {
  static const std::string dir = [] {
    llvm::SmallString<128> d;
    if (std::error_code ec =
            llvm::sys::fs::createUniqueDirectory("tessel-import-fuzz", d))
      llvm::report_fatal_error(
          llvm::Twine("cannot make a temporary directory: ") + ec.message());
    return d.str().str();
  }();
  return dir;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::tessel::OnnxImportOptions options;
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  if (auto annotations =
          mlir::tessel::parseOnnxShardingAnnotations(bytes, "fuzz.onnx");
      !annotations)
    llvm::consumeError(annotations.takeError());
  auto model = mlir::tessel::importOnnxBuffer(
      *mlir::tessel::fuzzContext(), bytes, emptyDir(), "fuzz.onnx", options);
  if (!model) {
    llvm::consumeError(model.takeError());
    return 0;
  }
  return 0;
}
