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

#define TSL_CUDA(expr, what)                                                   \
  do {                                                                         \
    cudaError_t tslErr_ = (expr);                                              \
    if (tslErr_ != cudaSuccess)                                                \
      return ::tessel::runtime::cuda::cudaFail(tslErr_, what);                 \
  } while (false)

#define TSL_CUBLAS(expr, what)                                                 \
  do {                                                                         \
    cublasStatus_t tslErr_ = (expr);                                           \
    if (tslErr_ != CUBLAS_STATUS_SUCCESS)                                      \
      return ::tessel::runtime::cuda::cublasFail(tslErr_, what);               \
  } while (false)

#endif // TESSEL_RUNTIME_CUDA_CUDASTATUS_H
