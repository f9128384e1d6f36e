//===- ReduceKind.h - The reductions of collectives -------------*- C++ -*-===//
//
// A vocabulary type of programs (an all_reduce's `reduce` attribute) and of
// communicators (Communicator.h) alike.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_REDUCEKIND_H
#define TESSEL_RUNTIME_REDUCEKIND_H

#include <optional>
#include <string_view>

namespace tessel::runtime {

/// Reductions of all_reduce and reduce_scatter. Mean is Sum divided by the
/// number of members (f32 only).
enum class ReduceKind { Sum, Max, Min, Mean, Prod };

/// "sum", "max", "min", "mean", "prod".
const char *reduceKindName(ReduceKind kind);
std::optional<ReduceKind> parseReduceKind(std::string_view name);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_REDUCEKIND_H
