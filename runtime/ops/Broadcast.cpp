//===- Broadcast.cpp - Strided iteration for broadcasting kernels ---------===//
#include "tessel/ops/Broadcast.h"

namespace tessel::runtime {

std::vector<int64_t> broadcastStrides(const Shape &shape, size_t rank,
                                      const Shape &result) {
  std::vector<int64_t> s(rank, 0);
  int64_t stride = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    size_t src = shape.size() - 1 - i;
    size_t dst = rank - 1 - i;
    s[dst] = (shape[src] == 1 && result[dst] != 1) ? 0 : stride;
    stride *= shape[src];
  }
  return s;
}

StridedPlan makeStridedPlan(const Shape &result,
                            const std::vector<std::vector<int64_t>> &strides) {
  StridedPlan plan;
  plan.numOperands = static_cast<int>(strides.size());
  plan.total = numElements(result);
  // Drop dims of size 1, then merge contiguous neighbours.
  for (size_t d = 0; d < result.size(); ++d) {
    if (result[d] == 1)
      continue;
    std::array<int64_t, kMaxOperands> st{};
    for (size_t k = 0; k < strides.size(); ++k)
      st[k] = strides[k][d];
    if (!plan.dims.empty()) {
      bool merge = true;
      for (size_t k = 0; k < strides.size() && merge; ++k)
        merge = plan.strides.back()[k] == st[k] * result[d];
      if (merge) {
        plan.dims.back() *= result[d];
        plan.strides.back() = st;
        continue;
      }
    }
    plan.dims.push_back(result[d]);
    plan.strides.push_back(st);
  }
  if (plan.dims.empty()) {
    plan.dims.push_back(1);
    plan.strides.push_back({});
  }
  return plan;
}

StridedPlan makeBroadcastPlan(const Shape &result,
                              const std::vector<const Shape *> &operands) {
  std::vector<std::vector<int64_t>> strides;
  for (const Shape *s : operands)
    strides.push_back(broadcastStrides(*s, result.size(), result));
  return makeStridedPlan(result, strides);
}

} // namespace tessel::runtime
