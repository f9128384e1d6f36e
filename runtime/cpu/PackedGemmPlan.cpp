//===- PackedGemmPlan.cpp - which GEMMs take packed weights ---------------===//
#include "PackedGemm.h"
#include "tessel/runtime/MappedFile.h"
#include "tessel/runtime/Program.h"

namespace tessel::runtime::cpu {

PackedWeights packConstantWeights(const Program &prog) {
  const size_t nOps = prog.ops.size();
  const auto &B = prog.buffers;
  PackedWeights out;
  std::vector<std::unique_ptr<PackedGemm>> &packed = out.gemms;
  packed.resize(nOps);
  out.gathers.assign(nOps, nullptr);
  // Readers of each buffer, and those a packed copy serves.
  std::vector<int> readers(B.size(), 0), served(B.size(), 0);
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
    if (packed[i] && w.fileBacked && ++served[w.id] == readers[w.id])
      dropFileBackedPages(w.data, w.bytes);
  }

  // The tables whose rows a packed gemm holds as its columns (B
  // transposed), by buffer.
  std::vector<const PackedGemm *> columnsOf(B.size(), nullptr);
  for (size_t i = 0; i < nOps; ++i)
    if (packed[i] && prog.ops[i].kind == OpKind::Gemm && prog.ops[i].transB)
      columnsOf[prog.ops[i].operands[1]] = packed[i].get();
  for (size_t i = 0; i < nOps; ++i) {
    const Op &op = prog.ops[i];
    if (op.kind != OpKind::Gather || op.operands.size() != 2 || op.axis != 0)
      continue;
    const BufferInfo &table = B[op.operands[0]];
    const PackedGemm *g = columnsOf[table.id];
    if (!g || table.shape.size() != 2 || table.shape[0] != g->n() ||
        table.shape[1] != g->k())
      continue;
    out.gathers[i] = g;
    if (table.fileBacked && ++served[table.id] == readers[table.id])
      dropFileBackedPages(table.data, table.bytes);
  }
  return out;
}

} // namespace tessel::runtime::cpu
