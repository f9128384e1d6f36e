//===- ExternalData.h - confining ONNX external data ------------*- C++ -*-===//
//
// An ONNX tensor stored as external data names a file by `location`; the
// model comes from someone else, so the location must not reach any file
// but its own data (docs/security.md).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_LIB_IMPORT_EXTERNALDATA_H
#define TESSEL_LIB_IMPORT_EXTERNALDATA_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace onnx {
class TensorProto;
} // namespace onnx

namespace mlir::tessel::detail {

/// A checked external data file.
struct ExternalFile {
  std::string path;  // modelDir/location
  uint64_t size = 0; // bytes
};

/// Resolves tensor `tensor`'s external data `location` against the model's
/// folder `modelDir` as ONNX's own loader does, and refuses (with one message
/// naming the tensor and the location, returned in `error`) a location that
/// is empty or absolute, has a `..` component, is a symbolic link or resolves
/// (after symbolic links) outside `modelDir`, is not a regular file, or is a
/// file with several hard links.
bool resolveExternalData(llvm::StringRef modelDir, llvm::StringRef tensor,
                         llvm::StringRef location, ExternalFile &out,
                         std::string &error);

/// Where tensor `t`'s bytes lie in its external data file.
struct ExternalSlice {
  ExternalFile file;
  std::string location;
  uint64_t offset = 0, length = 0;
};

/// Reads `t`'s `location`, `offset` and `length` entries, resolves the file
/// (resolveExternalData), and checks that [offset, offset + length) lies
/// inside it. The length is `expectedBytes` where given (a `length` entry
/// that differs is refused, `what` naming the tensor's type and size in the
/// message), else the `length` entry, which must then be present. One
/// message naming the tensor, the file, the offset and the length, in
/// `error`, on any refusal.
bool locateExternalData(llvm::StringRef modelDir, const onnx::TensorProto &t,
                        std::optional<uint64_t> expectedBytes,
                        llvm::StringRef what, ExternalSlice &out,
                        std::string &error);

} // namespace mlir::tessel::detail

#endif // TESSEL_LIB_IMPORT_EXTERNALDATA_H
