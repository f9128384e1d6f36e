//===- PackedGemmPlan.cpp - which GEMMs take packed weights ---------------===//
#include "PackedGemm.h"
#include "tessel/runtime/MappedFile.h"
#include "tessel/runtime/Program.h"

namespace tessel::runtime::cpu {

std::vector<std::unique_ptr<PackedGemm>>
packConstantWeightGemms(const Program &prog) {
  const size_t nOps = prog.ops.size();
  const auto &B = prog.buffers;
  std::vector<std::unique_ptr<PackedGemm>> packed(nOps);
  std::vector<int> readers(B.size(), 0), packers(B.size(), 0);
  for (const Op &op : prog.ops)
    for (int id : op.operands)
      ++readers[id];
  for (size_t i = 0; i < nOps; ++i) {
    const Op &op = prog.ops[i];
    const bool gemm = op.kind == OpKind::Gemm;
    if ((op.kind != OpKind::MatMul && !gemm) || op.operands.size() < 2 ||
        op.results.size() != 1 || op.intAttr("bf16_operands", 0) ||
        (gemm && op.transA) || (gemm && op.operands.size() > 3))
      continue;
    const BufferInfo &a = B[op.operands[0]], &w = B[op.operands[1]],
                     &r = B[op.results[0]];
    if (a.dtype != DType::F32 || w.dtype != DType::F32 ||
        r.dtype != DType::F32 || !w.isReadOnly() || w.shape.size() != 2 ||
        a.shape.size() < 2 || r.numel == 0)
      continue;
    const bool transB = gemm && op.transB;
    const int64_t k = transB ? w.shape[1] : w.shape[0];
    const int64_t n = transB ? w.shape[0] : w.shape[1];
    // A matmul's batch folds into M: w is 2-D, so the result is A's rows
    // times n.
    if (k <= 0 || n <= 0 || a.shape.back() != k || r.shape.back() != n ||
        r.numel / n != a.numel / k)
      continue;
    packed[i] =
        PackedGemm::create(static_cast<const float *>(w.data), k, n, transB);
    if (packed[i] && w.fileBacked && ++packers[w.id] == readers[w.id])
      dropFileBackedPages(w.data, w.bytes);
  }
  return packed;
}

} // namespace tessel::runtime::cpu
