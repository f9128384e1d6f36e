//===- Npy.h - NumPy .npy files ---------------------------------*- C++ -*-===//
//
// Reads and writes .npy (format versions 1.0, 2.0 and 3.0) for the dtypes
// '<f4', '<i8', '<i4' and '|b1' in C order.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_NPY_H
#define TESSEL_RUNTIME_NPY_H

#include "tessel/runtime/Status.h"
#include "tessel/runtime/Tensor.h"

#include <string>

namespace tessel::runtime {

/// Parses an in-memory .npy image; `what` names it in error messages.
Status parseNpy(const void *data, size_t size, const std::string &what,
                Tensor &out);

/// A C-ordered .npy image's header: the 'descr' as written ("<f2"), the
/// shape, and where the data starts.
struct NpyHeader {
  std::string descr;
  Shape shape;
  size_t dataStart = 0;
};
/// The header of an in-memory .npy image, for a reader with element types
/// of its own (the compiler's weights); parseNpy's checks and messages up
/// to the dtype, which the caller checks.
Status parseNpyHeader(const void *data, size_t size, const std::string &what,
                      NpyHeader &out);
/// Reads the .npy file at `path`.
Status readNpy(const std::string &path, Tensor &out);
/// Serialises `t` as a version 1.0 .npy image.
std::string encodeNpy(const Tensor &t);
/// Writes `t` to `path` as .npy.
Status writeNpy(const std::string &path, const Tensor &t);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_NPY_H
