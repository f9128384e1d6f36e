//===- CudaKernelKinds.h - Which op kinds each CUDA family builds -*- C++
//-*-===//
//
// The kinds each kernel family of the CUDA backend builds, one constexpr
// array per family (k<Family>Kinds, the families of KernelFamilies.h). A
// family's register function adds a factory for exactly the kinds of its
// array (registerFamily, CudaKernelRegistry.h), so these arrays are what the
// backend runs, known at compile time:
// test/unit/Runtime/CudaKernelCoverageTest.cpp static_asserts, for every
// kind of the op table (TESSEL_RUNTIME_OP_KINDS), that exactly one family
// lists it. A new op kind without a CUDA kernel therefore breaks that test's
// build, not a user's run; the test also checks, without a device, that
// the registry holds a factory for each listed kind and for no other.
//
// Each kind is in the family that registers it on the CPU backend too
// (runtime/cpu/<Family>.cpp): softmax and log_softmax in Normalization,
// relu_grad in Training; device code is in the family's <Family>.cu.
//
// The unary and binary elementwise ops come from the op table itself
// (TESSEL_RUNTIME_UNARY_SCALAR_OPS, TESSEL_RUNTIME_BINARY_SCALAR_OPS: their
// scalar functions, ScalarOps.h and BinaryOps.h, run on both backends).
//
// This header needs no CUDA header: the coverage test compiles anywhere.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CUDA_CUDAKERNELKINDS_H
#define TESSEL_RUNTIME_CUDA_CUDAKERNELKINDS_H

#include "tessel/ops/KernelFamilies.h"
#include "tessel/runtime/OpKind.h"

#include <cstddef>

namespace tessel::runtime::cuda {

inline constexpr OpKind kElementwiseKinds[] = {
#define TESSEL_UNARY_SCALAR(Kind, Types, SetMembers) OpKind::Kind,
    TESSEL_RUNTIME_UNARY_SCALAR_OPS(TESSEL_UNARY_SCALAR)
#undef TESSEL_UNARY_SCALAR
    // clang-format off
    OpKind::Cast, OpKind::RoundFloat};
// clang-format on

inline constexpr OpKind kBinaryKinds[] = {
#define TESSEL_BINARY_SCALAR(Kind, Types) OpKind::Kind,
    TESSEL_RUNTIME_BINARY_SCALAR_OPS(TESSEL_BINARY_SCALAR)
#undef TESSEL_BINARY_SCALAR
    // clang-format off
    OpKind::Compare, OpKind::Where};
// clang-format on

inline constexpr OpKind kMatMulKinds[] = {OpKind::MatMul, OpKind::Gemm};

inline constexpr OpKind kReduceKinds[] = {OpKind::ReduceSum, OpKind::ReduceMean,
                                          OpKind::ReduceMax, OpKind::CumSum};

inline constexpr OpKind kNormalizationKinds[] = {
    OpKind::Softmax, OpKind::LogSoftmax, OpKind::LayerNorm, OpKind::RmsNorm,
    OpKind::BatchNorm};

inline constexpr OpKind kDataMovementKinds[] = {
    OpKind::Reshape,       OpKind::Copy,   OpKind::ChunkFetch,
    OpKind::Transpose,     OpKind::Slice,  OpKind::Concat,
    OpKind::Split,         OpKind::Expand, OpKind::Gather,
    OpKind::GatherElements};

inline constexpr OpKind kConvKinds[] = {
    OpKind::Conv2D, OpKind::Conv2DBackwardData, OpKind::Conv2DBackwardWeight};

inline constexpr OpKind kPoolKinds[] = {
    OpKind::MaxPool, OpKind::AvgPool, OpKind::GlobalAvgPool,
    OpKind::MaxPoolBackward, OpKind::AvgPoolBackward};

inline constexpr OpKind kCollectiveKinds[] = {OpKind::AllReduce,
                                              OpKind::AllGather,
                                              OpKind::ReduceScatter,
                                              OpKind::AllToAll,
                                              OpKind::CollectivePermute,
                                              OpKind::Broadcast,
                                              OpKind::Send,
                                              OpKind::Recv,
                                              OpKind::Wait};

inline constexpr OpKind kTrainingKinds[] = {
    OpKind::GatherGrad,         OpKind::GeluGrad,
    OpKind::LogSoftmaxGrad,     OpKind::ReluGrad,
    OpKind::BatchNormVariance,  OpKind::BatchNormGradSums,
    OpKind::BatchNormGradInput, OpKind::AdamUpdate,
    OpKind::SgdUpdate};

inline constexpr OpKind kAttentionKinds[] = {OpKind::Attention,
                                             OpKind::AttentionGrad};

inline constexpr OpKind kFusedKinds[] = {OpKind::FusedElementwise};

inline constexpr OpKind kCustomKinds[] = {OpKind::CustomCall};

/// How many families list `kind` (1 for every kind the backend runs).
constexpr int cudaFamiliesOf(OpKind kind) {
  int n = 0;
#define TESSEL_X(F)                                                            \
  for (OpKind k : k##F##Kinds)                                                 \
    n += k == kind;
  TESSEL_KERNEL_FAMILIES(TESSEL_X)
#undef TESSEL_X
  return n;
}

} // namespace tessel::runtime::cuda

#endif // TESSEL_RUNTIME_CUDA_CUDAKERNELKINDS_H
