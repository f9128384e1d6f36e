//===- OpKind.h - The instruction set ---------------------------*- C++ -*-===//
#ifndef TESSEL_RUNTIME_OPKIND_H
#define TESSEL_RUNTIME_OPKIND_H

#include <optional>
#include <string_view>

namespace tessel::runtime {

// X(Enumerator, "name", number): number equals tessel.artifact.OpKind.
#define TESSEL_RUNTIME_OP_KINDS(X)                                             \
  X(Neg, "neg", 1)                                                             \
  X(Exp, "exp", 2)                                                             \
  X(Log, "log", 3)                                                             \
  X(Sqrt, "sqrt", 4)                                                           \
  X(Rsqrt, "rsqrt", 5)                                                         \
  X(Tanh, "tanh", 6)                                                           \
  X(Erf, "erf", 7)                                                             \
  X(Sigmoid, "sigmoid", 8)                                                     \
  X(Relu, "relu", 9)                                                           \
  X(Gelu, "gelu", 10)                                                          \
  X(Reciprocal, "reciprocal", 11)                                              \
  X(Abs, "abs", 12)                                                            \
  X(Not, "not", 13)                                                            \
  X(Cast, "cast", 14)                                                          \
  X(Add, "add", 20)                                                            \
  X(Sub, "sub", 21)                                                            \
  X(Mul, "mul", 22)                                                            \
  X(Div, "div", 23)                                                            \
  X(Pow, "pow", 24)                                                            \
  X(Max, "max", 25)                                                            \
  X(Min, "min", 26)                                                            \
  X(Compare, "compare", 27)                                                    \
  X(Where, "where", 28)                                                        \
  X(MatMul, "matmul", 40)                                                      \
  X(Gemm, "gemm", 41)                                                          \
  X(ReduceSum, "reduce_sum", 50)                                               \
  X(ReduceMean, "reduce_mean", 51)                                             \
  X(ReduceMax, "reduce_max", 52)                                               \
  X(Softmax, "softmax", 60)                                                    \
  X(LogSoftmax, "log_softmax", 61)                                             \
  X(LayerNorm, "layer_norm", 62)                                               \
  X(RmsNorm, "rms_norm", 63)                                                   \
  X(BatchNorm, "batch_norm", 64)                                               \
  X(Gather, "gather", 70)                                                      \
  X(Reshape, "reshape", 71)                                                    \
  X(Transpose, "transpose", 72)                                                \
  X(Slice, "slice", 73)                                                        \
  X(Concat, "concat", 74)                                                      \
  X(Split, "split", 75)                                                        \
  X(Expand, "expand", 76)                                                      \
  X(Copy, "copy", 77)                                                          \
  X(Conv2D, "conv2d", 80)                                                      \
  X(MaxPool, "max_pool", 81)                                                   \
  X(AvgPool, "avg_pool", 82)                                                   \
  X(GlobalAvgPool, "global_avg_pool", 83)                                      \
  X(AllReduce, "all_reduce", 100)                                              \
  X(AllGather, "all_gather", 101)                                              \
  X(ReduceScatter, "reduce_scatter", 102)                                      \
  X(AllToAll, "all_to_all", 103)                                               \
  X(CollectivePermute, "collective_permute", 104)                              \
  X(Broadcast, "broadcast", 105)                                               \
  X(Send, "send", 106)                                                         \
  X(Recv, "recv", 107)

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
