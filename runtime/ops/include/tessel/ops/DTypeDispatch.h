//===- DTypeDispatch.h - From a run-time dtype to a C++ type ----*- C++ -*-===//
//
// One switch for every kernel (CPU, CUDA launchers, communicators) that picks
// its template instance by dtype or element size, once per instruction (not
// per element):
//
//   visitDType(dtype, [&](auto tag) {
//     using T = typename decltype(tag)::type;
//     kernel(static_cast<const T *>(x), static_cast<T *>(y), n);
//   });
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_OPS_DTYPEDISPATCH_H
#define TESSEL_OPS_DTYPEDISPATCH_H

#include "tessel/runtime/DType.h"

#include <cstdint>
#include <cstdlib>
#include <type_traits>

namespace tessel::runtime {

template <typename T> struct TypeTag { using type = T; };

/// Calls f(TypeTag<T>()) with T the type of `t`'s elements: float, double,
/// int64_t, int32_t, or uint8_t for bool. The halves (bf16, f16) have no
/// arithmetic kernels: the program verifier refuses them for every op but
/// data movement and cast (the compiler computes them in f32 around the op,
/// -tessel-float-normalization), so none reaches here; castKernel and
/// visitElementSize handle them. f64 is computed on the CPU only: the CUDA
/// executor refuses a program that holds it (docs/precision.md), so device
/// code instantiates no double kernels.
template <typename F> decltype(auto) visitDType(DType t, F &&f) {
  switch (t) {
  case DType::BF16:
  case DType::F16:
    std::abort(); // unreachable: refused by the verifier
  case DType::F64:
#if defined(__CUDACC__)
    std::abort(); // unreachable: refused by the CUDA executor
#else
    return f(TypeTag<double>());
#endif
  case DType::I64:
    return f(TypeTag<int64_t>());
  case DType::I32:
    return f(TypeTag<int32_t>());
  case DType::Bool:
    return f(TypeTag<uint8_t>());
  case DType::F32:
    break;
  }
  return f(TypeTag<float>());
}

/// Calls f(TypeTag<T>()) with an unsigned T of `bytes` bytes (1, 2, 4 or 8:
/// copies that move elements whatever their type), or returns `otherwise`.
/// 2 bytes are bf16 and f16.
template <typename F, typename R>
R visitElementSize(size_t bytes, R otherwise, F &&f) {
  switch (bytes) {
  case 1:
    return f(TypeTag<uint8_t>());
  case 2:
    return f(TypeTag<uint16_t>());
  case 4:
    return f(TypeTag<uint32_t>());
  case 8:
    return f(TypeTag<unsigned long long>());
  }
  return otherwise;
}

/// T is `bool`'s element type.
template <typename T> constexpr bool kIsBool = std::is_same_v<T, uint8_t>;

} // namespace tessel::runtime

#endif // TESSEL_OPS_DTYPEDISPATCH_H
