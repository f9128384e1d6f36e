//===- IndexPlan.cpp - Indexers from shapes and strides -------------------===//
#include "IndexPlan.h"

#include <string>

namespace tessel::runtime::cuda {

std::vector<int64_t> rowMajorStrides(const Shape &s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;)
    st[d - 1] = st[d] * s[d];
  return st;
}

Status toIndexer(const cpu::StridedPlan &plan, Indexer &ix) {
  if (plan.dims.size() > static_cast<size_t>(kMaxDims))
    return Status::error("indexes " + std::to_string(plan.dims.size()) +
                         " non-mergeable dims; the cuda backend handles at "
                         "most " +
                         std::to_string(kMaxDims));
  if (plan.numOperands > kMaxOperands)
    return Status::error("too many operands for one kernel");
  ix = Indexer();
  ix.rank = static_cast<int>(plan.dims.size());
  ix.numOperands = plan.numOperands;
  ix.total = plan.total;
  for (size_t d = 0; d < plan.dims.size(); ++d) {
    ix.dims[d] = plan.dims[d];
    for (int k = 0; k < plan.numOperands; ++k)
      ix.strides[d][k] = plan.strides[d][k];
  }
  return Status::ok();
}

Status stridedIndexer(const Shape &dims,
                      const std::vector<std::vector<int64_t>> &strides,
                      Indexer &ix) {
  return toIndexer(cpu::makeStridedPlan(dims, strides), ix);
}

} // namespace tessel::runtime::cuda
