//===- OpKind.h - The instruction set ---------------------------*- C++ -*-===//
#ifndef TESSEL_RUNTIME_OPKIND_H
#define TESSEL_RUNTIME_OPKIND_H

#include <optional>
#include <string_view>

namespace tessel::runtime {

// The instruction set, generated from the dialect's ODS (the op table):
// TESSEL_RUNTIME_OP_KINDS(X) calls X(Enumerator, "name", number) per kind,
// number equal to tessel.artifact.OpKind; TESSEL_RUNTIME_OP_CHECKS and
// TESSEL_RUNTIME_OP_ATTRS give each kind's load-time checks and attributes.
#include "tessel/runtime/OpKinds.inc"

enum class OpKind : int {
#define TESSEL_X(E, N, V) E = V,
  TESSEL_RUNTIME_OP_KINDS(TESSEL_X)
#undef TESSEL_X
};

/// The lower-case name used in docs, diagnostics and ArtifactBuilder.
const char *opKindName(OpKind kind);
std::optional<OpKind> parseOpKind(std::string_view name);
std::optional<OpKind> opKindFromInt(int value);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_OPKIND_H
