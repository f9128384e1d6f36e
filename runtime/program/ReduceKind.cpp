//===- ReduceKind.cpp - The reductions' names -----------------------------===//
#include "tessel/runtime/ReduceKind.h"

#include <cstddef>

namespace tessel::runtime {

namespace {
/// By ReduceKind's value.
constexpr const char *kReduceKindNames[] = {"sum", "max", "min", "mean",
                                            "prod"};
constexpr size_t kReduceKinds = sizeof(kReduceKindNames) / sizeof(char *);
} // namespace

const char *reduceKindName(ReduceKind kind) {
  size_t k = static_cast<size_t>(kind);
  return k < kReduceKinds ? kReduceKindNames[k] : "?";
}

std::optional<ReduceKind> parseReduceKind(std::string_view name) {
  for (size_t k = 0; k < kReduceKinds; ++k)
    if (name == kReduceKindNames[k])
      return static_cast<ReduceKind>(k);
  return std::nullopt;
}

} // namespace tessel::runtime
