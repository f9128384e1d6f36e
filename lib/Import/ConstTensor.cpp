//===- ConstTensor.cpp - tensors known at import time ---------------------===//

#include "ConstTensor.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/STLExtras.h"
#include "tessel/support/Checked.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>

using namespace mlir::tessel::detail;
using llvm::ArrayRef;
using llvm::SmallVector;

bool mlir::tessel::detail::isFloatDType(int32_t dtype) {
  return dtype == kFloat || dtype == kFloat16 || dtype == kDouble ||
         dtype == kBFloat16;
}

llvm::StringRef mlir::tessel::detail::getDTypeName(int32_t dtype) {
  switch (dtype) {
  case kFloat: return "float";
  case kUInt8: return "uint8";
  case kInt8: return "int8";
  case kUInt16: return "uint16";
  case kInt16: return "int16";
  case kInt32: return "int32";
  case kInt64: return "int64";
  case kString: return "string";
  case kBool: return "bool";
  case kFloat16: return "float16";
  case kDouble: return "double";
  case kUInt32: return "uint32";
  case kUInt64: return "uint64";
  case kBFloat16: return "bfloat16";
  default: return "unknown";
  }
}

int64_t mlir::tessel::detail::getNumElements(ArrayRef<int64_t> shape) {
  // Saturated: an overflowing product (with no 0 dim) is INT64_MAX.
  return ::tessel::checkedProduct(shape).value_or(
      std::numeric_limits<int64_t>::max());
}

std::optional<CheckedSize>
mlir::tessel::detail::checkedByteSize(ArrayRef<int64_t> shape,
                                      uint64_t width) {
  std::optional<int64_t> elements = ::tessel::checkedProduct(shape);
  if (!elements)
    return std::nullopt;
  std::optional<uint64_t> bytes = ::tessel::checkedBytes(*elements, width);
  if (!bytes)
    return std::nullopt;
  return CheckedSize{*elements, int64_t(*bytes)};
}

static unsigned byteWidth(int32_t dtype) {
  switch (dtype) {
  case kDouble: case kInt64: case kUInt64: return 8;
  case kFloat: case kInt32: case kUInt32: return 4;
  case kFloat16: case kBFloat16: case kInt16: case kUInt16: return 2;
  case kInt8: case kUInt8: case kBool: return 1;
  default: return 0;
  }
}

static const llvm::fltSemantics &halfSemantics(int32_t dtype) {
  return dtype == kFloat16 ? llvm::APFloat::IEEEhalf()
                           : llvm::APFloat::BFloat();
}

/// Wraps an integer to the dtype's range, as a cast in C would.
static int64_t wrapInt(int32_t dtype, int64_t v) {
  switch (dtype) {
  case kBool: return v != 0;
  case kInt8: return int8_t(v);
  case kUInt8: return uint8_t(v);
  case kInt16: return int16_t(v);
  case kUInt16: return uint16_t(v);
  case kInt32: return int32_t(v);
  case kUInt32: return uint32_t(v);
  default: return v;
  }
}

/// Rounds a double to what the float dtype can hold.
static double roundFloat(int32_t dtype, double v) {
  if (dtype == kFloat)
    return double(float(v));
  if (dtype == kFloat16 || dtype == kBFloat16) {
    bool lost;
    llvm::APFloat a(v);
    a.convert(halfSemantics(dtype), llvm::APFloat::rmNearestTiesToEven, &lost);
    a.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
              &lost);
    return a.convertToDouble();
  }
  return v;
}

bool ConstTensor::isSplat() const {
  int64_t n = size();
  for (int64_t k = 1; k < n; ++k)
    if (isFloat() ? f[k] != f[0] : i[k] != i[0])
      return false;
  return true;
}

ConstTensor ConstTensor::zeros(int32_t dtype, ArrayRef<int64_t> shape) {
  ConstTensor t;
  t.dtype = dtype;
  t.shape.assign(shape.begin(), shape.end());
  if (t.isFloat())
    t.f.assign(getNumElements(shape), 0.0);
  else
    t.i.assign(getNumElements(shape), 0);
  return t;
}

ConstTensor ConstTensor::fromInts(ArrayRef<int64_t> values,
                                  ArrayRef<int64_t> shape, int32_t dtype) {
  ConstTensor t = zeros(dtype, shape);
  for (size_t k = 0; k < values.size(); ++k)
    t.setInt(k, values[k]);
  return t;
}

void ConstTensor::set(int64_t k, double v) {
  if (isFloat())
    f[k] = roundFloat(dtype, v);
  else if (dtype == kBool)
    i[k] = v != 0.0;
  else if (std::isnan(v))
    i[k] = 0;
  else
    i[k] = wrapInt(dtype, truncToInt64(v));
}

void ConstTensor::setInt(int64_t k, int64_t v) {
  if (isFloat())
    f[k] = roundFloat(dtype, double(v));
  else
    i[k] = wrapInt(dtype, v);
}

SmallVector<int64_t> ConstTensor::toInts() const {
  SmallVector<int64_t> out;
  out.reserve(size());
  for (int64_t k = 0, n = size(); k < n; ++k)
    out.push_back(getInt(k));
  return out;
}

template <typename T>
static void put(std::vector<char> &out, size_t k, T v) {
  std::memcpy(out.data() + k * sizeof(T), &v, sizeof(T));
}

template <typename T>
static T get(ArrayRef<char> in, size_t k) {
  T v;
  std::memcpy(&v, in.data() + k * sizeof(T), sizeof(T));
  return v;
}

std::vector<char> ConstTensor::toBytes() const {
  int64_t n = size();
  std::vector<char> out(n * byteWidth(dtype));
  for (int64_t k = 0; k < n; ++k) {
    switch (dtype) {
    case kFloat: put<float>(out, k, float(f[k])); break;
    case kDouble: put<double>(out, k, f[k]); break;
    case kFloat16:
    case kBFloat16: {
      bool lost;
      llvm::APFloat a(f[k]);
      a.convert(halfSemantics(dtype), llvm::APFloat::rmNearestTiesToEven, &lost);
      put<uint16_t>(out, k, uint16_t(a.bitcastToAPInt().getZExtValue()));
      break;
    }
    case kInt64: case kUInt64: put<int64_t>(out, k, i[k]); break;
    case kInt32: case kUInt32: put<int32_t>(out, k, int32_t(i[k])); break;
    case kInt16: case kUInt16: put<int16_t>(out, k, int16_t(i[k])); break;
    default: put<int8_t>(out, k, int8_t(i[k])); break;
    }
  }
  return out;
}

std::optional<ConstTensor> ConstTensor::fromBytes(int32_t dtype,
                                                  ArrayRef<int64_t> shape,
                                                  ArrayRef<char> bytes) {
  unsigned width = byteWidth(dtype);
  int64_t n = getNumElements(shape);
  if (width == 0 || bytes.size() != size_t(n) * width)
    return std::nullopt;
  ConstTensor t = zeros(dtype, shape);
  for (int64_t k = 0; k < n; ++k) {
    switch (dtype) {
    case kFloat: t.f[k] = get<float>(bytes, k); break;
    case kDouble: t.f[k] = get<double>(bytes, k); break;
    case kFloat16:
    case kBFloat16:
      t.f[k] = llvm::APFloat(halfSemantics(dtype),
                             llvm::APInt(16, get<uint16_t>(bytes, k)))
                   .convertToDouble();
      break;
    case kInt64: case kUInt64: t.i[k] = get<int64_t>(bytes, k); break;
    case kInt32: t.i[k] = get<int32_t>(bytes, k); break;
    case kUInt32: t.i[k] = get<uint32_t>(bytes, k); break;
    case kInt16: t.i[k] = get<int16_t>(bytes, k); break;
    case kUInt16: t.i[k] = get<uint16_t>(bytes, k); break;
    case kInt8: t.i[k] = get<int8_t>(bytes, k); break;
    case kBool: t.i[k] = get<uint8_t>(bytes, k) != 0; break;
    default: t.i[k] = get<uint8_t>(bytes, k); break;
    }
  }
  return t;
}

std::optional<SmallVector<int64_t>>
mlir::tessel::detail::broadcastShape(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t k = 0; k < rank; ++k) {
    int64_t da = k < rank - a.size() ? 1 : a[k - (rank - a.size())];
    int64_t db = k < rank - b.size() ? 1 : b[k - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[k] = da == 1 ? db : da;
  }
  return out;
}

/// Row-major strides of `shape` aligned to the last `rank` dims of an output,
/// with stride 0 on broadcast dims.
static SmallVector<int64_t> broadcastStrides(ArrayRef<int64_t> shape,
                                             ArrayRef<int64_t> out) {
  SmallVector<int64_t> strides(out.size(), 0);
  int64_t stride = 1;
  for (int64_t k = int64_t(shape.size()) - 1; k >= 0; --k) {
    int64_t o = k + int64_t(out.size() - shape.size());
    strides[o] = shape[k] == 1 ? 0 : stride;
    // Saturates: past the product's range only the stride of a dim that
    // no index reaches (the tensor has a zero dim) could be asked for.
    stride = ::tessel::checkedMul(stride, shape[k]).value_or(INT64_MAX);
  }
  return strides;
}

/// Calls fn(outIndex, inIndex...) for every element of `out`, with each
/// input's flat index under broadcasting.
template <size_t N, typename Fn>
static void forEachBroadcast(ArrayRef<int64_t> out,
                             std::array<ArrayRef<int64_t>, N> inputs, Fn fn) {
  std::array<SmallVector<int64_t>, N> strides;
  for (size_t j = 0; j < N; ++j)
    strides[j] = broadcastStrides(inputs[j], out);
  int64_t total = getNumElements(out);
  SmallVector<int64_t> idx(out.size(), 0);
  std::array<int64_t, N> flat{};
  for (int64_t k = 0; k < total; ++k) {
    fn(k, flat);
    // Increment the multi-index.
    for (int64_t d = int64_t(out.size()) - 1; d >= 0; --d) {
      ++idx[d];
      for (size_t j = 0; j < N; ++j)
        flat[j] += strides[j][d];
      if (idx[d] < out[d])
        break;
      for (size_t j = 0; j < N; ++j)
        flat[j] -= strides[j][d] * out[d];
      idx[d] = 0;
    }
  }
}

std::optional<ConstTensor> mlir::tessel::detail::foldUnary(const ConstTensor &x,
                                                          const UnaryFn &fn) {
  ConstTensor r = ConstTensor::zeros(x.dtype, x.shape);
  for (int64_t k = 0, n = x.size(); k < n; ++k)
    r.set(k, fn(x.getDouble(k)));
  return r;
}

std::optional<ConstTensor>
mlir::tessel::detail::foldBinary(const ConstTensor &a, const ConstTensor &b,
                                 const BinaryFn &fn, const BinaryIntFn &intFn,
                                 int32_t resultDType) {
  auto shape = broadcastShape(a.shape, b.shape);
  if (!shape || getNumElements(*shape) > kMaxFoldElements)
    return std::nullopt;
  ConstTensor r = ConstTensor::zeros(resultDType, *shape);
  bool useInt = !a.isFloat() && !b.isFloat() && intFn;
  forEachBroadcast<2>(*shape, {ArrayRef<int64_t>(a.shape), ArrayRef<int64_t>(b.shape)},
                      [&](int64_t k, const std::array<int64_t, 2> &in) {
                        if (useInt)
                          r.setInt(k, intFn(a.i[in[0]], b.i[in[1]]));
                        else
                          r.set(k, fn(a.getDouble(in[0]), b.getDouble(in[1])));
                      });
  return r;
}

std::optional<ConstTensor> mlir::tessel::detail::foldWhere(const ConstTensor &c,
                                                          const ConstTensor &x,
                                                          const ConstTensor &y) {
  auto s1 = broadcastShape(c.shape, x.shape);
  if (!s1)
    return std::nullopt;
  auto shape = broadcastShape(*s1, y.shape);
  if (!shape || getNumElements(*shape) > kMaxFoldElements)
    return std::nullopt;
  ConstTensor r = ConstTensor::zeros(x.dtype, *shape);
  forEachBroadcast<3>(*shape,
                      {ArrayRef<int64_t>(c.shape), ArrayRef<int64_t>(x.shape),
                       ArrayRef<int64_t>(y.shape)},
                      [&](int64_t k, const std::array<int64_t, 3> &in) {
                        bool cond = c.getInt(in[0]) != 0;
                        if (r.isFloat())
                          r.f[k] = cond ? x.f[in[1]] : y.f[in[2]];
                        else
                          r.i[k] = cond ? x.i[in[1]] : y.i[in[2]];
                      });
  return r;
}

ConstTensor mlir::tessel::detail::foldCast(const ConstTensor &x, int32_t dtype) {
  ConstTensor r = ConstTensor::zeros(dtype, x.shape);
  for (int64_t k = 0, n = x.size(); k < n; ++k) {
    if (x.isFloat())
      r.set(k, x.f[k]);
    else
      r.setInt(k, x.i[k]);
  }
  return r;
}

ConstTensor mlir::tessel::detail::foldReshape(const ConstTensor &x,
                                              ArrayRef<int64_t> shape) {
  ConstTensor r = x;
  r.shape.assign(shape.begin(), shape.end());
  return r;
}

/// Copies element `from` of `x` to element `to` of `r` (same dtype).
static void copyElement(ConstTensor &r, int64_t to, const ConstTensor &x,
                        int64_t from) {
  if (r.isFloat())
    r.f[to] = x.f[from];
  else
    r.i[to] = x.i[from];
}

static SmallVector<int64_t> rowMajorStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// Visits every multi-index of `shape` in row-major order.
template <typename Fn>
static void forEachIndex(ArrayRef<int64_t> shape, Fn fn) {
  int64_t total = getNumElements(shape);
  SmallVector<int64_t> idx(shape.size(), 0);
  for (int64_t k = 0; k < total; ++k) {
    fn(k, ArrayRef<int64_t>(idx));
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
}

std::optional<ConstTensor>
mlir::tessel::detail::foldTranspose(const ConstTensor &x, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(x.shape[p]);
  ConstTensor r = ConstTensor::zeros(x.dtype, shape);
  SmallVector<int64_t> strides = rowMajorStrides(x.shape);
  forEachIndex(shape, [&](int64_t k, ArrayRef<int64_t> idx) {
    int64_t from = 0;
    for (size_t d = 0; d < perm.size(); ++d)
      from += idx[d] * strides[perm[d]];
    copyElement(r, k, x, from);
  });
  return r;
}

std::optional<ConstTensor>
mlir::tessel::detail::foldSlice(const ConstTensor &x, ArrayRef<int64_t> starts,
                                ArrayRef<int64_t> limits,
                                ArrayRef<int64_t> strides) {
  SmallVector<int64_t> shape;
  for (size_t d = 0; d < starts.size(); ++d)
    shape.push_back((limits[d] - starts[d] + strides[d] - 1) / strides[d]);
  ConstTensor r = ConstTensor::zeros(x.dtype, shape);
  SmallVector<int64_t> inStrides = rowMajorStrides(x.shape);
  forEachIndex(shape, [&](int64_t k, ArrayRef<int64_t> idx) {
    int64_t from = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      from += (starts[d] + idx[d] * strides[d]) * inStrides[d];
    copyElement(r, k, x, from);
  });
  return r;
}

std::optional<ConstTensor>
mlir::tessel::detail::foldConcat(ArrayRef<const ConstTensor *> xs, int64_t axis) {
  SmallVector<int64_t> shape = xs.front()->shape;
  shape[axis] = 0;
  for (const ConstTensor *x : xs)
    shape[axis] += x->shape[axis];
  if (getNumElements(shape) > kMaxFoldElements)
    return std::nullopt;
  ConstTensor r = ConstTensor::zeros(xs.front()->dtype, shape);
  int64_t outer = getNumElements(ArrayRef<int64_t>(shape).take_front(axis));
  int64_t inner = getNumElements(ArrayRef<int64_t>(shape).drop_front(axis + 1));
  int64_t k = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (const ConstTensor *x : xs) {
      int64_t chunk = x->shape[axis] * inner;
      for (int64_t j = 0; j < chunk; ++j)
        copyElement(r, k++, *x, o * chunk + j);
    }
  return r;
}

std::optional<ConstTensor>
mlir::tessel::detail::foldExpand(const ConstTensor &x, ArrayRef<int64_t> shape) {
  if (getNumElements(shape) > kMaxFoldElements)
    return std::nullopt;
  ConstTensor r = ConstTensor::zeros(x.dtype, shape);
  forEachBroadcast<1>(shape, {ArrayRef<int64_t>(x.shape)},
                      [&](int64_t k, const std::array<int64_t, 1> &in) {
                        copyElement(r, k, x, in[0]);
                      });
  return r;
}

std::optional<ConstTensor>
mlir::tessel::detail::foldGather(const ConstTensor &data,
                                 const ConstTensor &indices, int64_t axis) {
  SmallVector<int64_t> shape(data.shape.begin(), data.shape.begin() + axis);
  shape.append(indices.shape.begin(), indices.shape.end());
  shape.append(data.shape.begin() + axis + 1, data.shape.end());
  if (getNumElements(shape) > kMaxFoldElements)
    return std::nullopt;
  ConstTensor r = ConstTensor::zeros(data.dtype, shape);
  int64_t outer = getNumElements(ArrayRef<int64_t>(data.shape).take_front(axis));
  int64_t inner =
      getNumElements(ArrayRef<int64_t>(data.shape).drop_front(axis + 1));
  int64_t axisSize = data.shape[axis];
  int64_t n = indices.size();
  int64_t k = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j) {
      int64_t base = (o * axisSize + indices.getInt(j)) * inner;
      for (int64_t e = 0; e < inner; ++e)
        copyElement(r, k++, data, base + e);
    }
  return r;
}

std::optional<ConstTensor>
mlir::tessel::detail::foldGatherElements(const ConstTensor &data,
                                         const ConstTensor &indices,
                                         int64_t axis) {
  ConstTensor r = ConstTensor::zeros(data.dtype, indices.shape);
  SmallVector<int64_t> strides = rowMajorStrides(data.shape);
  const int64_t rank = indices.shape.size();
  SmallVector<int64_t> coord(rank, 0);
  for (int64_t j = 0; j < indices.size(); ++j) {
    int64_t from = 0;
    for (int64_t d = 0; d < rank; ++d)
      from += (d == axis ? indices.getInt(j) : coord[d]) * strides[d];
    copyElement(r, j, data, from);
    for (int64_t d = rank - 1; d >= 0 && ++coord[d] == indices.shape[d]; --d)
      coord[d] = 0;
  }
  return r;
}

std::optional<ConstTensor>
mlir::tessel::detail::foldCumSum(const ConstTensor &x, int64_t axis,
                                 bool exclusive, bool reverse) {
  ConstTensor r = ConstTensor::zeros(x.dtype, x.shape);
  ArrayRef<int64_t> shape = x.shape;
  const int64_t outer = getNumElements(shape.take_front(axis)),
                len = shape[axis],
                inner = getNumElements(shape.drop_front(axis + 1));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < inner; ++k) {
      double accF = 0;
      int64_t accI = 0;
      for (int64_t t = 0; t < len; ++t) {
        const int64_t at = (o * len + (reverse ? len - 1 - t : t)) * inner + k;
        if (r.isFloat()) {
          const double next = roundFloat(x.dtype, accF + x.f[at]);
          r.set(at, exclusive ? accF : next);
          accF = next;
        } else {
          const int64_t next = wrapAdd(accI, x.i[at]);
          r.setInt(at, exclusive ? accI : next);
          accI = next;
        }
      }
    }
  return r;
}
