//===- DTypeNames.h - The element types' names in each format ---*- C++ -*-===//
//
// A format names the element types with a table of seven strings (F32, I64,
// I32, Bool, BF16, F16, F64: DType's values 1 to 7, in order; nullptr where the
// format has no name for one); these look a type up in one and back.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_LIB_DTYPENAMES_H
#define TESSEL_RUNTIME_LIB_DTYPENAMES_H

#include "tessel/runtime/DType.h"

#include <array>
#include <optional>
#include <string_view>

namespace tessel::runtime {

using DTypeNames = std::array<const char *, 7>;

/// `t`'s name in `names`; `unknown` for a value out of range.
inline const char *dtypeNameIn(const DTypeNames &names, DType t,
                               const char *unknown) {
  unsigned i = static_cast<unsigned>(t) - 1;
  return i < names.size() && names[i] ? names[i] : unknown;
}

/// The type `name` names in `names`.
inline std::optional<DType> parseDTypeIn(const DTypeNames &names,
                                         std::string_view name) {
  for (unsigned i = 0; i < names.size(); ++i)
    if (names[i] && name == names[i])
      return static_cast<DType>(i + 1);
  return std::nullopt;
}

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_LIB_DTYPENAMES_H
