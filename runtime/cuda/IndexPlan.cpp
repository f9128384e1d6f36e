//===- IndexPlan.cpp - Indexers from shapes and strides -------------------===//
#include "IndexPlan.h"
#include "Indexer32.h"

#include <string>

namespace tessel::runtime::cuda {

std::vector<int64_t> rowMajorStrides(const Shape &s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;)
    st[d - 1] = st[d] * s[d];
  return st;
}

Status toIndexer(const StridedPlan &plan, StridedIndex &out) {
  if (plan.dims.size() > static_cast<size_t>(kMaxDims))
    return Status::error("indexes " + std::to_string(plan.dims.size()) +
                         " non-mergeable dims; the cuda backend handles at "
                         "most " +
                         std::to_string(kMaxDims));
  if (plan.numOperands > kMaxOperands)
    return Status::error("too many operands for one kernel");
  out = StridedIndex();
  Indexer &ix = out.wide;
  ix.rank = static_cast<int>(plan.dims.size());
  ix.numOperands = plan.numOperands;
  ix.total = plan.total;
  for (size_t d = 0; d < plan.dims.size(); ++d) {
    ix.dims[d] = plan.dims[d];
    for (int k = 0; k < plan.numOperands; ++k)
      ix.strides[d][k] = plan.strides[d][k];
  }
  out.fits32 = narrow(ix, out.narrow);
  return Status::ok();
}

Status stridedIndexer(const Shape &dims,
                      const std::vector<std::vector<int64_t>> &strides,
                      StridedIndex &ix) {
  return toIndexer(makeStridedPlan(dims, strides), ix);
}

} // namespace tessel::runtime::cuda
