//===- PackedGemm.h - GEMMs on constant weights packed once -----*- C++ -*-===//
//
// A matmul or gemm whose B is a constant f32 weight (inference, or a frozen
// layer) runs here on CPUs with AVX2 and FMA but not AVX-512: B is packed
// once, when the executor is created, into the panels the micro-kernel
// reads, and each call packs only A. Why our own and not oneDNN's sgemm
// there: on an AVX2-only EPYC (Zen 1), one thread, GPT-2-small's inference
// shapes, oneDNN 2.6 reaches 33-36 GFLOP/s, its matmul primitive 27-37, and
// ONNX Runtime's MLAS, which packs its weights once too, 36-37 of the
// core's 40 (bench/run-gemm-rates prints all of them and this kernel in one
// run; docs/fusion.md has the figures). On AVX-512 CPUs oneDNN's kernels
// are twice as wide and stay.
//
// The layout is BLIS's: op(B) cut into blocks of kKc rows, each block into
// panels of 16 columns (zero past n); A packed per [kMc x kKc] block into
// panels of 6 rows; a 6 x 16 register tile of twelve ymm sums adds one
// block's kKc products in k order, and the blocks' partial sums are added
// into C in k order. Threads take ranges of panels (columns of C).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CPU_PACKEDGEMM_H
#define TESSEL_RUNTIME_CPU_PACKEDGEMM_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace tessel::runtime {
class Program;
} // namespace tessel::runtime

namespace tessel::runtime::cpu {

class ThreadPool;

/// Whether GEMMs on constant f32 weights should take PackedGemm on this
/// CPU: AVX2 and FMA without AVX-512F. TESSEL_PACKED_GEMM=1 takes it
/// wherever AVX2 and FMA are (tests, comparisons), =0 nowhere.
bool packedGemmPreferred();

/// op(B) [k, n] packed once; C = alpha * A op(B) + beta * C per call.
class PackedGemm {
public:
  /// Packs op(B): `b` is row-major [k, n], or [n, k] with `transB`. Null
  /// when k or n is not positive, the CPU lacks AVX2 or FMA, or the packed
  /// copy (k x n rounded up to 16 columns, in floats) cannot be allocated.
  static std::unique_ptr<PackedGemm> create(const float *b, int64_t k,
                                            int64_t n, bool transB);
  ~PackedGemm();
  PackedGemm(const PackedGemm &) = delete;
  PackedGemm &operator=(const PackedGemm &) = delete;

  int64_t k() const { return kDim; }
  int64_t n() const { return nDim; }
  /// The packed copy's size.
  size_t bytes() const;

  /// op(B)[:, j] into out[k]: with transB, row j of the matrix packed (a
  /// tied embedding's row, for its gather). 0 <= j < n.
  void column(int64_t j, float *out) const;

  /// C[m, n] = alpha * A[m, k] op(B) + beta * C, A and C row-major with row
  /// strides lda and ldc; beta = 0 never reads C. Threads on `pool` take
  /// ranges of C's 16-column panels; each thread's sums are in k order, so
  /// the result does not depend on the thread count. False, with C partly
  /// written, when a thread's block of A (144 KiB) cannot be allocated.
  bool multiply(int64_t m, const float *a, int64_t lda, float alpha, float beta,
                float *c, int64_t ldc, ThreadPool &pool) const;

private:
  PackedGemm(int64_t k, int64_t n, float *packed);
  int64_t kDim, nDim, panels;
  float *packed; // [k blocks][panels][block rows][16]
};

/// What the executor packs, by op index (PackedGemmPlan.cpp): a PackedGemm
/// for each f32 matmul or gemm whose B is a 2-D constant (a weight) and
/// whose A folds into rows of k (null for the others, and where packing
/// fails: they keep oneDNN's sgemm); and for each axis-0 gather of f32 rows
/// from a table that a packed gemm reads transposed (a tied embedding and
/// its head), that PackedGemm, whose columns are the table's rows. A
/// file-backed weight's pages are released as soon as every op that reads
/// it has been served by a packed copy, so that the copies and the mapped
/// originals are never all resident at once.
struct PackedWeights {
  std::vector<std::unique_ptr<PackedGemm>> gemms;
  std::vector<const PackedGemm *> gathers;
};
PackedWeights packConstantWeights(const Program &prog);

} // namespace tessel::runtime::cpu

#endif // TESSEL_RUNTIME_CPU_PACKEDGEMM_H
