//===- CommTestUtil.h - Index helpers shared by the comm tests --*- C++ -*-===//
//
// CommTest.cpp (Gloo, local) and ShmCommTest.cpp (shared memory) compute
// every collective's expected result themselves, independently of the
// communicators: these are the index computations both need.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TEST_UNIT_RUNTIME_COMMTESTUTIL_H
#define TESSEL_TEST_UNIT_RUNTIME_COMMTESTUTIL_H

#include "TestUtil.h"
#include "tessel/runtime/Communicator.h"
#include "tessel/runtime/Tensor.h"

#include <vector>

namespace tessel::runtime::commtest {

/// Row-major multi-index of flat index `i` in shape `s` (TestUtil.h), and
/// back.
using tessel::runtime::test::unravel;
inline int64_t ravel(const std::vector<int64_t> &idx, const Shape &s) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); ++d)
    f = f * s[d] + idx[d];
  return f;
}

/// Which member owns index `x` of a dim of `total` split over `n`
/// (Communicator.h's tensor_split convention).
inline int owner(int64_t x, int64_t total, int n) {
  for (int r = 0; r < n; ++r)
    if (x < chunkOffset(total, n, r) + chunkSize(total, n, r))
      return r;
  return n - 1;
}

inline TensorView view(Tensor &t) {
  return TensorView(t.data(), t.dtype(), t.shape());
}

} // namespace tessel::runtime::commtest

#endif // TESSEL_TEST_UNIT_RUNTIME_COMMTESTUTIL_H
