//===- CudaTestUtil.h - The CUDA conformance suite's helpers ---*- C++ -*-===//
//
// Programs run on "cpu" and on "cuda" and their outputs compared (floats
// within a tolerance, integers and bools exactly); TSL_REQUIRE_CUDA skips a
// test, with the reason, where no device is usable. Used by CudaTest.cpp
// (the forward instruction set) and CudaTrainingTest.cpp (the gradients).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TEST_UNIT_RUNTIME_CUDATESTUTIL_H
#define TESSEL_TEST_UNIT_RUNTIME_CUDATESTUTIL_H

#include "TestUtil.h"

#include <cuda_runtime.h>

#include <cmath>
#include <string>

namespace tessel::runtime::test {

/// True when at least one CUDA device is usable; `why` says why not.
inline bool cudaAvailable(std::string &why) {
  static std::string reason;
  static const bool ok = [] {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      reason = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
      return false;
    }
    if (n == 0) {
      reason = "cudaGetDeviceCount found 0 devices";
      return false;
    }
    return true;
  }();
  why = reason;
  return ok;
}

#define TSL_REQUIRE_CUDA()                                                     \
  do {                                                                         \
    std::string why_;                                                          \
    if (!cudaAvailable(why_))                                                  \
      GTEST_SKIP() << "no CUDA device (" << why_ << ")";                       \
  } while (false)

/// Runs a built program on `backend` with the given inputs; fills `outs`
/// with every output, by the program's output order.
inline Status
runProgram(const std::string &backend,
           const std::shared_ptr<const Program> &prog,
           const std::vector<std::pair<std::string, Tensor>> &inputs,
           std::vector<Tensor> &outs, int repeats = 1) {
  std::unique_ptr<Executor> exec;
  TSL_RETURN_IF_ERROR(createExecutor(backend, prog, {}, exec));
  if (std::string(exec->backend()) != backend)
    return Status::error("executor reports backend " +
                         std::string(exec->backend()));
  for (int r = 0; r < repeats; ++r) {
    for (const auto &[name, t] : inputs)
      TSL_RETURN_IF_ERROR(exec->setInput(name, t));
    TSL_RETURN_IF_ERROR(exec->run());
  }
  outs.clear();
  for (const auto &[name, id] : prog->outputs) {
    (void)id;
    Tensor t;
    TSL_RETURN_IF_ERROR(exec->getOutput(name, t));
    outs.push_back(std::move(t));
  }
  return Status::ok();
}

/// Expects equal dtype and shape, and equal values: floats within
/// atol + rtol·|cpu| (NaN matches NaN, infinities match exactly).
inline void expectSame(const Tensor &cpu, const Tensor &gpu, double atol,
                       double rtol, const std::string &what,
                       bool halvesExact = true) {
  SCOPED_TRACE(what);
  ASSERT_EQ(cpu.dtype(), gpu.dtype());
  ASSERT_EQ(cpu.shape(), gpu.shape());
  int bad = 0;
  for (int64_t i = 0; i < cpu.numElements(); ++i) {
    bool ok = true;
    std::string c, g;
    // Integers exactly.
    auto same = [&](auto *cv, auto *gv) {
      ok = cv[i] == gv[i];
      c = std::to_string(+cv[i]);
      g = std::to_string(+gv[i]);
    };
    auto close = [&](double cv, double gv) {
      ok = (std::isnan(cv) && std::isnan(gv)) || (std::isinf(cv) && cv == gv) ||
           std::fabs(cv - gv) <= atol + rtol * std::fabs(cv);
      c = std::to_string(cv);
      g = std::to_string(gv);
    };
    switch (cpu.dtype()) {
    case DType::F32:
      close(cpu.data<float>()[i], gpu.data<float>()[i]);
      break;
    case DType::I64:
      same(cpu.data<int64_t>(), gpu.data<int64_t>());
      break;
    case DType::I32:
      same(cpu.data<int32_t>(), gpu.data<int32_t>());
      break;
    case DType::Bool:
      same(cpu.data<uint8_t>(), gpu.data<uint8_t>());
      break;
    case DType::BF16: // the bits exactly where both round once from f32
    case DType::F16:  // sums in one order; else like floats
      if (halvesExact)
        same(cpu.data<uint16_t>(), gpu.data<uint16_t>());
      else
        close(halfToF32(cpu.dtype(), cpu.data<uint16_t>()[i]),
              halfToF32(cpu.dtype(), gpu.data<uint16_t>()[i]));
      break;
    }
    if (!ok && ++bad <= 5)
      ADD_FAILURE() << "element " << i << ": cpu " << c << ", cuda " << g;
  }
  EXPECT_EQ(bad, 0) << bad << " of " << cpu.numElements() << " elements differ";
}

struct Tol {
  double atol = 1e-5, rtol = 1e-5;
  bool halvesExact = true; // false: half results within atol and rtol
};

/// Runs one instruction on both backends and compares every result.
inline void conformOp(const std::string &op, const std::vector<Tensor> &inputs,
                      const std::vector<std::pair<DType, Shape>> &results,
                      Attrs attrs = {}, Tol tol = {}) {
  SCOPED_TRACE(op);
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (size_t i = 0; i < inputs.size(); ++i)
    feeds.emplace_back("in" + std::to_string(i), inputs[i]);
  std::shared_ptr<const Program> prog;
  Status s = buildOneOp(op, inputs, results, std::move(attrs), prog);
  ASSERT_TRUE(s.isOk()) << s.message();
  std::vector<Tensor> want, got;
  s = runProgram("cpu", prog, feeds, want);
  ASSERT_TRUE(s.isOk()) << "cpu: " << s.message();
  s = runProgram("cuda", prog, feeds, got);
  ASSERT_TRUE(s.isOk()) << "cuda: " << s.message();
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i)
    expectSame(want[i], got[i], tol.atol, tol.rtol,
               op + " result " + std::to_string(i), tol.halvesExact);
}

/// A one-input, one-output op whose result has the input's dtype and shape.
inline void conformSame(const std::string &op, const Tensor &x,
                        Attrs attrs = {}, Tol tol = {}) {
  conformOp(op, {x}, {{x.dtype(), x.shape()}}, std::move(attrs), tol);
}

} // namespace tessel::runtime::test

#endif // TESSEL_TEST_UNIT_RUNTIME_CUDATESTUTIL_H
