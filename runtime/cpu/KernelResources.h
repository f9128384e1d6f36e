//===- KernelResources.h - What the CPU executor prepares for kernels -*-===//
//
// Planned and created once, by CpuExecutor::init, before any step is built;
// kernel factories (KernelRegistry.h) read it, and the steps they build may
// point into it for the executor's life.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CPU_KERNELRESOURCES_H
#define TESSEL_RUNTIME_CPU_KERNELRESOURCES_H

#include "Bf16MatMul.h"
#include "ConvPlan.h"
#include "DnnlConv.h"
#include "DnnlMatMul.h"
#include "DnnlPool.h"
#include "PackedGemm.h"
#include "tessel/runtime/CollectiveDriver.h"

#include <cstdlib>
#include <memory>
#include <vector>

namespace tessel::runtime::cpu {

struct KernelResources {
  using AlignedBuffer = std::unique_ptr<float, void (*)(void *)>;

  /// A oneDNN reorder between two layouts of `shape`, kept for the
  /// executor's life; null (and `stepError` set) when oneDNN has none.
  LayoutReorder *reorderFor(const Shape &shape, Layout from, Layout to);

  // Ops on oneDNN's kernels, by op index (null: the loops of Conv.cpp,
  // Pool.cpp, MatMul.cpp): convs and max pools, and the buffer each writes
  // (its result, or a folded relu's or add's); matmul + bias + gelu, and the
  // buffer each writes (the gelu's). Then the convs' fusions, the buffers'
  // layouts (ConvPlan.h), and the reorders between them.
  std::shared_ptr<DnnlContext> dnnl;
  std::vector<std::unique_ptr<DnnlConv>> dnnlConvs;
  std::vector<std::unique_ptr<DnnlPool>> dnnlPools;
  std::vector<int> dnnlWrites;
  std::vector<std::unique_ptr<DnnlMatMul>> dnnlMatMuls;
  std::vector<int> matmulWrites;
  // f32 matmuls and gemms whose B, a constant, is packed once (PackedGemm.h;
  // null: oneDNN's sgemm), by op index; gathers that read their table's
  // rows from a packed head's columns (null: from the table).
  std::vector<std::unique_ptr<PackedGemm>> packedGemms;
  std::vector<const PackedGemm *> packedGathers;
  std::vector<ConvFusion> fusions;
  LayoutPlan layouts;
  std::vector<std::unique_ptr<LayoutReorder>> reorders;
  // The first failure while building steps (checked once, by init).
  Status stepError = Status::ok();
  // im2col columns (Conv.cpp), and the copies oneDNN convs' reorders share.
  std::vector<float> scratch;
  AlignedBuffer convSrc{nullptr, std::free}, convDst{nullptr, std::free};
  /// Scratch shared by steps that use it one at a time, grown while steps
  /// are built (before any runs): a step keeps the Scratch's address and
  /// reads `data` when it runs.
  struct Scratch {
    AlignedBuffer data{nullptr, std::free};
    size_t bytes = 0;
    /// At least `n` bytes from now on; false when they cannot be had.
    bool reserve(size_t n) {
      if (n <= bytes)
        return true;
      AlignedBuffer grown(static_cast<float *>(std::aligned_alloc(64, (n + 63) / 64 * 64)),
                          std::free);
      if (!grown)
        return false;
      data = std::move(grown);
      bytes = n;
      return true;
    }
  };
  // The source, weight and result of trained convs in oneDNN's layouts
  // (ConvTraining.cpp).
  Scratch trainedConv[3];
  // Matmuls and gemms marked bf16_operands on oneDNN's bf16 matmul, by op
  // index (null: the f32 GEMM on the rounded values), and the bf16 copies
  // of their two operands (Bf16MatMul.h), in `bf16Copies`: a parameter's
  // rounded value in a copy of its own, written once per step by its
  // round_float as it rounds; an activation that a round_float rounds or
  // several GEMMs read in a block shared by lifetime, written by its
  // round_float or its first reader; a bf16 weight that a cast widens (a
  // bf16 model's) read as it is; other operands are converted by each GEMM
  // into the shared scratch of their position.
  std::vector<std::unique_ptr<Bf16MatMul>> bf16MatMuls;
  struct Bf16Operands {
    uint16_t *copy[2] = {nullptr, nullptr}; // null: bf16Scratch[k]
    bool convert[2] = {true, true};
  };
  std::vector<Bf16Operands> bf16Operands;
  Scratch bf16Scratch[2];
  std::vector<AlignedBuffer> bf16Copies;
  // By op index: the bf16 copy a round_float writes beside its result
  // (the copy its readers share), or null.
  std::vector<uint16_t *> bf16RoundCopies;
  // By op index: the round_float's f32 result has no reader but the GEMMs
  // that read the copy, so it writes the copy alone.
  std::vector<bool> bf16RoundCopyOnly;
  // A half GEMM without a oneDNN kernel for its type (f16 on most CPUs,
  // bf16 without bf16 dot products): its a, b, c and result as f32
  // (MatMul.cpp, halfStep).
  Scratch halfGemm[4];
  // A half attention's (or attention_grad's) half operands and results as
  // f32 (Attention.cpp, halfStep): q, kt, v[, out, grad], then the results.
  Scratch halfAttention[8];
  // Expanded copies of norm scale/bias operands that broadcast.
  std::vector<std::vector<float>> expanded;
  CollectiveDriver collectives;
};

} // namespace tessel::runtime::cpu

#endif // TESSEL_RUNTIME_CPU_KERNELRESOURCES_H
