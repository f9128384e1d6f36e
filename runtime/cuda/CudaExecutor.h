//===- CudaExecutor.h - The CUDA backend ------------------------*- C++ -*-===//
//
// createExecutor("cuda", ...) lands here (runtime/lib/Executor.cpp, built
// with TESSEL_RUNTIME_HAVE_CUDA when runtime/cuda is). The executor holds
// one device arena (cudaMalloc), the weights and constants uploaded once,
// one non-blocking stream and one cuBLAS handle; every instruction becomes a
// closure over device pointers, as in the CPU backend, built by its kind's
// kernel factory (CudaKernelRegistry.h). run() enqueues them all and
// synchronises once at the end.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CUDA_CUDAEXECUTOR_H
#define TESSEL_RUNTIME_CUDA_CUDAEXECUTOR_H

#include "tessel/runtime/Executor.h"

#include <memory>
#include <string>

namespace tessel::runtime::cuda {

/// Number of usable CUDA devices; 0 with `why` set when there is none (no
/// driver, driver too old, no device).
int deviceCount(std::string *why = nullptr);

/// Creates a CUDA executor on the current device (cudaGetDevice). Fails with
/// a message starting "no CUDA device" where there is none.
Status createCudaExecutor(std::shared_ptr<const Program> program,
                          const ExecutorOptions &options,
                          std::unique_ptr<Executor> &out);

/// Where buffer `id` of a CUDA executor lives: its address as kernels see
/// it (device memory; pinned host memory for a state kept in host memory,
/// Buffer.host), for tests and diagnostics. nullptr when `exec` is not a
/// CUDA executor or `id` is out of range.
const void *bufferAddress(const Executor &exec, int id);

} // namespace tessel::runtime::cuda

#endif // TESSEL_RUNTIME_CUDA_CUDAEXECUTOR_H
