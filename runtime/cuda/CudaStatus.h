//===- CudaStatus.h - CUDA and cuBLAS errors as Statuses --------*- C++ -*-===//
#ifndef TESSEL_RUNTIME_CUDA_CUDASTATUS_H
#define TESSEL_RUNTIME_CUDA_CUDASTATUS_H

#include "tessel/runtime/Status.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <string>

namespace tessel::runtime::cuda {

inline Status cudaFail(cudaError_t e, const std::string &what) {
  return Status::error("CUDA error in " + what + ": " + cudaGetErrorName(e) +
                       " (" + cudaGetErrorString(e) + ")");
}

inline Status cublasFail(cublasStatus_t e, const std::string &what) {
  return Status::error("cuBLAS error in " + what + ": " +
                       cublasGetStatusString(e));
}

/// Launch statuses of kernels: a failed launch names the instruction's kind
/// (run() adds its index and name).
inline Status launched(cudaError_t e, const char *kernel) {
  if (e == cudaSuccess)
    return Status::ok();
  return cudaFail(e, std::string(kernel) + " kernel");
}

} // namespace tessel::runtime::cuda

/// Returns fail(e, what) from the enclosing function unless `expr` gives
/// `success`.
#define TSL_CUDA_CHECK(Type, expr, success, fail, what)                        \
  do {                                                                         \
    Type tslErr_ = (expr);                                                     \
    if (tslErr_ != (success))                                                  \
      return ::tessel::runtime::cuda::fail(tslErr_, what);                     \
  } while (false)

#define TSL_CUDA(expr, what)                                                   \
  TSL_CUDA_CHECK(cudaError_t, expr, cudaSuccess, cudaFail, what)
#define TSL_CUBLAS(expr, what)                                                 \
  TSL_CUDA_CHECK(cublasStatus_t, expr, CUBLAS_STATUS_SUCCESS, cublasFail, what)

#endif // TESSEL_RUNTIME_CUDA_CUDASTATUS_H
