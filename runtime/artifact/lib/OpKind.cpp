//===- OpKind.cpp - The instruction set -----------------------------------===//
#include "tessel/runtime/OpKind.h"

namespace tessel::runtime {

const char *opKindName(OpKind kind) {
  switch (kind) {
#define TESSEL_X(E, N, V)                                                      \
  case OpKind::E:                                                              \
    return N;
    TESSEL_RUNTIME_OP_KINDS(TESSEL_X)
#undef TESSEL_X
  }
  return "unknown";
}

std::optional<OpKind> parseOpKind(std::string_view name) {
#define TESSEL_X(E, N, V)                                                      \
  if (name == N)                                                               \
    return OpKind::E;
  TESSEL_RUNTIME_OP_KINDS(TESSEL_X)
#undef TESSEL_X
  return std::nullopt;
}

std::optional<OpKind> opKindFromInt(int value) {
  switch (value) {
#define TESSEL_X(E, N, V)                                                      \
  case V:                                                                      \
    return OpKind::E;
    TESSEL_RUNTIME_OP_KINDS(TESSEL_X)
#undef TESSEL_X
  }
  return std::nullopt;
}

} // namespace tessel::runtime
