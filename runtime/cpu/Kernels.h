//===- Kernels.h - CPU kernels of the instruction set -----------*- C++ -*-===//
//
// Raw-pointer kernels over row-major tensors. Shapes and attributes have been
// checked by Program::create; kernels trust them.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CPU_KERNELS_H
#define TESSEL_RUNTIME_CPU_KERNELS_H

#include "tessel/runtime/DType.h"
#include "tessel/runtime/OpKind.h"
#include "tessel/runtime/Program.h"
#include "tessel/runtime/Status.h"

#include <cstdint>
#include <vector>

namespace tessel::runtime::cpu {

class ThreadPool;

// Elementwise.cpp
void castKernel(DType from, const void *x, DType to, void *y, int64_t n,
                ThreadPool &pool);

// Binary.cpp
void binaryKernel(OpKind kind, DType dtype, const void *a, const Shape &aShape,
                  const void *b, const Shape &bShape, void *out,
                  const Shape &outShape, ThreadPool &pool);
void compareKernel(ComparePredicate pred, DType dtype, const void *a,
                   const Shape &aShape, const void *b, const Shape &bShape,
                   uint8_t *out, const Shape &outShape, ThreadPool &pool);
void whereKernel(size_t elemSize, const uint8_t *cond, const Shape &cShape,
                 const void *x, const Shape &xShape, const void *y,
                 const Shape &yShape, void *out, const Shape &outShape,
                 ThreadPool &pool);

// MatMul.cpp
void matmulKernel(const float *a, const Shape &aShape, const float *b,
                  const Shape &bShape, float *out, const Shape &outShape);
void gemmKernel(const float *a, const Shape &aShape, const float *b,
                const Shape &bShape, const float *c, const Shape *cShape,
                float *out, bool transA, bool transB, float alpha, float beta);

// Reduce.cpp
void reduceKernel(OpKind kind, DType dtype, const void *x, const Shape &shape,
                  const std::vector<int64_t> &dims, void *out,
                  ThreadPool &pool);

/// ONNX CumSum along `axis`: floats summed in scan order, integers wrap.
void cumsumKernel(DType dtype, const void *x, const Shape &shape, int64_t axis,
                  bool exclusive, bool reverse, void *y, ThreadPool &pool);

// Normalization.cpp
void softmaxKernel(bool logSoftmax, const float *x, const Shape &shape,
                   int64_t axis, float *y, ThreadPool &pool);
/// layer_norm (rms = false) and rms_norm (rms = true) over dims [axis, rank);
/// `scale` and `bias` hold exactly prod(shape[axis:]) elements.
void layerNormKernel(bool rms, const float *x, const Shape &shape,
                     int64_t axis, float epsilon, const float *scale,
                     const float *bias, float *y, ThreadPool &pool);
void batchNormKernel(const float *x, const Shape &shape, const float *scale,
                     const float *bias, const float *mean, const float *var,
                     float epsilon, float *y, ThreadPool &pool);

// DataMovement.cpp
/// Copies a strided view: dst[i] (row-major over `dims`) = src[sum idx*stride].
void stridedCopy(size_t elemSize, const void *src, const Shape &dims,
                 const std::vector<int64_t> &srcStrides, void *dst,
                 ThreadPool &pool);
Status gatherKernel(size_t elemSize, const void *data, const Shape &dataShape,
                    DType indexType, const void *indices, int64_t numIndices,
                    int64_t axis, void *out);
/// out[j] = data at idx position j, with its index along `axis` (ONNX
/// GatherElements); fails naming the first index out of range.
Status gatherElementsKernel(size_t elemSize, const void *data,
                            const Shape &dataShape, DType indexType,
                            const void *indices, const Shape &idxShape,
                            int64_t axis, void *out);
void transposeKernel(size_t elemSize, const void *x, const Shape &shape,
                     const std::vector<int64_t> &perm, void *y,
                     ThreadPool &pool);
void sliceKernel(size_t elemSize, const void *x, const Shape &shape,
                 const std::vector<int64_t> &starts,
                 const std::vector<int64_t> &steps, void *y,
                 const Shape &outShape, ThreadPool &pool);
void concatKernel(size_t elemSize, const std::vector<const void *> &inputs,
                  const std::vector<const Shape *> &shapes, int64_t axis,
                  void *out, const Shape &outShape);
void splitKernel(size_t elemSize, const void *x, const Shape &shape,
                 int64_t axis, const std::vector<int64_t> &sizes,
                 const std::vector<void *> &outs);
void expandKernel(size_t elemSize, const void *x, const Shape &shape, void *y,
                  const Shape &outShape, ThreadPool &pool);

// Conv.cpp
/// Floats of scratch memory conv2dKernel needs.
int64_t conv2dScratchSize(const Shape &x, const Shape &w, const Shape &y,
                          const std::vector<int64_t> &strides,
                          const std::vector<int64_t> &pads,
                          const std::vector<int64_t> &dilations,
                          int64_t group);
void conv2dKernel(const float *x, const Shape &xShape, const float *w,
                  const Shape &wShape, const float *bias, float *y,
                  const Shape &yShape, const std::vector<int64_t> &strides,
                  const std::vector<int64_t> &pads,
                  const std::vector<int64_t> &dilations, int64_t group,
                  float *scratch, ThreadPool &pool);

// Pool.cpp
void maxPoolKernel(const float *x, const Shape &xShape, float *y,
                   const Shape &yShape, const std::vector<int64_t> &kernel,
                   const std::vector<int64_t> &strides,
                   const std::vector<int64_t> &pads, ThreadPool &pool);
void avgPoolKernel(const float *x, const Shape &xShape, float *y,
                   const Shape &yShape, const std::vector<int64_t> &kernel,
                   const std::vector<int64_t> &strides,
                   const std::vector<int64_t> &pads, bool countIncludePad,
                   ThreadPool &pool);
void globalAvgPoolKernel(const float *x, const Shape &xShape, float *y,
                         ThreadPool &pool);

} // namespace tessel::runtime::cpu

#endif // TESSEL_RUNTIME_CPU_KERNELS_H
