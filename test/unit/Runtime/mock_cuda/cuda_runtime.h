//===- cuda_runtime.h - A host mock of the CUDA runtime (tests) -*- C++ -*-===//
//
// The part of the CUDA runtime API that runtime/comm/NcclCommunicator.cpp
// uses, with CUDA's names and values, for NcclMockTest.cpp: "device memory"
// is host memory and a stream is a queue of work that runs in order (see
// MockGpu.h). The functions have C++ linkage on purpose: their symbols never
// clash with libcudart's, whatever else a test binary links.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TEST_MOCK_CUDA_RUNTIME_H
#define TESSEL_TEST_MOCK_CUDA_RUNTIME_H

#include <cstddef>

enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidPitchValue = 12,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
};
typedef enum cudaError cudaError_t;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01

struct CUstream_st;
typedef struct CUstream_st *cudaStream_t;

cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int *device);
const char *cudaGetErrorString(cudaError_t error);

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags);
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaStreamDestroy(cudaStream_t stream);

cudaError_t cudaMalloc(void **ptr, size_t size);
cudaError_t cudaFree(void *ptr);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                            cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src,
                              size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemsetAsync(void *dst, int value, size_t count,
                            cudaStream_t stream);

#endif // TESSEL_TEST_MOCK_CUDA_RUNTIME_H
