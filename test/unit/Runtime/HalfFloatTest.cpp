//===- HalfFloatTest.cpp - bf16 and f16: conversions, cast, storage -------===//
//
// HalfFloat.h's conversions against independent references (the
// compiler's _Float16 for f16; the two neighbouring bf16 values compared
// in double for bf16), from f32 and from f64, the cast kernel between every
// pair of types, the
// verifier's refusal of halves in arithmetic, and the halves in npy and
// safetensors files.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"
#include "tessel/runtime/HalfFloat.h"
#include "tessel/runtime/Safetensors.h"

#include <cmath>
#include <limits>

using namespace tessel::runtime;
using namespace tessel::runtime::test;

namespace {

/// f32s that exercise rounding: random bit patterns over every exponent,
/// and the edges of both formats (largest finite, overflow, subnormals,
/// ties, infinities, NaNs).
std::vector<float> sampleFloats() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.99f,
                          65520.0f, -65520.0f, 0x1p-14f, 0x1p-24f, 0x1p-25f,
                          0x1.8p-25f, 0x1.8p-24f, 0x1.ff8p-15f, 3.0f * 0x1p-26f,
                          0x1.002p0f, 0x1.006p0f, 0x1.0001p0f, 0x1.0003p0f,
                          std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::denorm_min(),
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()};
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = rng();
    float f = f32OfBits(u);
    if (!std::isnan(f))
      v.push_back(f);
  }
  return v;
}

TEST(HalfFloat, F16MatchesTheCompilersConversion) {
  for (float f : sampleFloats()) {
    _Float16 ref = static_cast<_Float16>(f);
    uint16_t want;
    std::memcpy(&want, &ref, 2);
    ASSERT_EQ(f32ToF16(f), want) << "f32 " << f;
  }
  for (uint32_t h = 0; h < 0x10000; ++h) {
    _Float16 x;
    const uint16_t bits = static_cast<uint16_t>(h);
    std::memcpy(&x, &bits, 2);
    const float want = static_cast<float>(x), got = f16ToF32(bits);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << "f16 bits " << h;
      ASSERT_TRUE(std::isnan(f16ToF32(f32ToF16(got))));
      continue;
    }
    ASSERT_EQ(bitsOfF32(got), bitsOfF32(want)) << "f16 bits " << h;
    ASSERT_EQ(f32ToF16(got), bits) << "round trip of f16 bits " << h;
  }
}

TEST(HalfFloat, Bf16RoundsToTheNearestEven) {
  for (float f : sampleFloats()) {
    const uint32_t u = bitsOfF32(f);
    const uint16_t got = f32ToBf16(f);
    if (std::isinf(f)) {
      ASSERT_EQ(got, u >> 16);
      continue;
    }
    // The two bf16 values around f, compared in double.
    const uint16_t lo = static_cast<uint16_t>(u >> 16), hi = lo + 1;
    const double dlo = bf16ToF32(lo), dhi = std::isinf(bf16ToF32(hi))
                                              ? std::ldexp(1.0, 128)
                                              : bf16ToF32(hi);
    const double dlo_abs = std::fabs(dlo), dhi_abs = std::fabs(dhi),
                 df = std::fabs(static_cast<double>(f));
    const double below = df - dlo_abs, above = dhi_abs - df;
    uint16_t want = below < above ? lo : above < below ? hi : (lo & 1 ? hi : lo);
    ASSERT_EQ(got, want) << "f32 " << f;
  }
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const float f = bf16ToF32(bits);
    if (std::isnan(f))
      ASSERT_TRUE(std::isnan(bf16ToF32(f32ToBf16(f))));
    else
      ASSERT_EQ(f32ToBf16(f), bits) << "round trip of bf16 bits " << h;
  }
}

Tensor halves(DType t, const std::vector<float> &v) {
  Tensor h(t, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i)
    h.data<uint16_t>()[i] = t == DType::BF16 ? f32ToBf16(v[i]) : f32ToF16(v[i]);
  return h;
}

std::vector<uint16_t> bitsOf(const Tensor &t) {
  const uint16_t *p = t.data<uint16_t>();
  return std::vector<uint16_t>(p, p + t.numElements());
}

TEST(HalfFloat, CastBetweenEveryPair) {
  const std::vector<float> v = {-2.75f, 0.0f, 3.0078125f, 1.0f, 70000.0f};
  const Tensor f = Tensor::fromVector<float>(DType::F32, {5}, v);
  // The bits PyTorch's .to(torch.bfloat16) / .to(torch.float16) give: a tie
  // (3.0078125) to even, 70000 up in bf16 and past f16's range.
  const std::vector<uint16_t> wantDown[2] = {
      {0xc030, 0x0000, 0x4040, 0x3f80, 0x4789},
      {0xc180, 0x0000, 0x4204, 0x3c00, 0x7c00}};
  const std::vector<uint16_t> wantFromInt[2] = {{0xc0a0, 0x4380, 0x47c3},
                                                {0xc500, 0x5c04, 0x7c00}};
  for (DType h : {DType::BF16, DType::F16}) {
    SCOPED_TRACE(dtypeName(h));
    const std::string name = dtypeName(h);
    const int which = h == DType::BF16 ? 0 : 1;
    // f32 -> half rounds once; half -> f32 is exact.
    Tensor down = runOp("cast", {f}, {{h, {5}}}, Attrs().s("to", name))[0];
    ASSERT_EQ(down.dtype(), h);
    EXPECT_EQ(bitsOf(down), wantDown[which]);
    Tensor up = runOp("cast", {down}, {{DType::F32, {5}}}, Attrs().s("to", "f32"))[0];
    for (int i = 0; i < 5; ++i)
      EXPECT_EQ(up.data<float>()[i], h == DType::BF16
                                         ? bf16ToF32(down.data<uint16_t>()[i])
                                         : f16ToF32(down.data<uint16_t>()[i]));
    // To and from integers and bools through f32, truncating toward zero.
    Tensor ints = runOp("cast", {down}, {{DType::I64, {5}}}, Attrs().s("to", "i64"))[0];
    EXPECT_EQ(ints.data<int64_t>()[0], -2);
    EXPECT_EQ(ints.data<int64_t>()[2], 3);
    Tensor bools = runOp("cast", {down}, {{DType::Bool, {5}}}, Attrs().s("to", "bool"))[0];
    EXPECT_EQ(bools.data<uint8_t>()[1], 0);
    EXPECT_EQ(bools.data<uint8_t>()[3], 1);
    Tensor i = Tensor::fromVector<int64_t>(DType::I64, {3}, {-5, 257, 100001});
    Tensor fromInt = runOp("cast", {i}, {{h, {3}}}, Attrs().s("to", name))[0];
    EXPECT_EQ(bitsOf(fromInt), wantFromInt[which]);
  }
  // bf16 -> f16 rounds the (exact) f32 value once: PyTorch's
  // .to(torch.bfloat16).to(torch.float16).
  Tensor b = halves(DType::BF16, v);
  Tensor toF16 = runOp("cast", {b}, {{DType::F16, {5}}}, Attrs().s("to", "f16"))[0];
  EXPECT_EQ(bitsOf(toF16),
            (std::vector<uint16_t>{0xc180, 0x0000, 0x4200, 0x3c00, 0x7c00}));
}

// The cast kernel's vector loops (runtime/cpu/HalfConvert.h: integer
// rounding for bf16, F16C for f16) give the scalar conversions' bits, which
// the tests above check against independent references: every half
// widened, and the sample f32s (with NaNs of both kinds) narrowed.
TEST(HalfFloat, CastKernelMatchesTheScalarConversions) {
  std::vector<float> f = sampleFloats();
  f.push_back(f32OfBits(0x7fc00001u)); // quiet NaN with a payload
  f.push_back(f32OfBits(0xff800123u)); // signalling NaN
  const int64_t n = static_cast<int64_t>(f.size());
  const Tensor in = Tensor::fromVector<float>(DType::F32, {n}, f);
  for (DType h : {DType::BF16, DType::F16}) {
    SCOPED_TRACE(dtypeName(h));
    Tensor down = runOp("cast", {in}, {{h, {n}}}, Attrs().s("to", dtypeName(h)))[0];
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(down.data<uint16_t>()[i], f32ToHalf(h, f[i])) << "f32 " << f[i];
    Tensor all(h, {0x10000});
    for (uint32_t b = 0; b < 0x10000; ++b)
      all.data<uint16_t>()[b] = static_cast<uint16_t>(b);
    Tensor up = runOp("cast", {all}, {{DType::F32, {0x10000}}}, Attrs().s("to", "f32"))[0];
    for (uint32_t b = 0; b < 0x10000; ++b) {
      const float want = halfToF32(h, static_cast<uint16_t>(b)),
                  got = up.data<float>()[b];
      // F16C widens a signalling f16 NaN quiet (as _Float16 does).
      if (std::isnan(want))
        ASSERT_TRUE(std::isnan(got) && std::signbit(got) == std::signbit(want))
            << "half bits " << b;
      else
        ASSERT_EQ(bitsOfF32(got), bitsOfF32(want)) << "half bits " << b;
    }
  }
}

// f64 to a half rounds once, to the half nearest the f64 (as numpy's
// astype and PyTorch's casts do), not through the nearest f32, which can
// round twice: 1 + 2^-11 + 2^-40 is nearest f32 1 + 2^-11, a tie between
// f16s that goes to even (1), where the f64 is nearer 1 + 2^-10.
TEST(HalfFloat, F64CastsRoundOnceToEachHalf) {
  std::vector<double> d = {1.0 + 0x1p-11 + 0x1p-40,
                           -(1.0 + 0x1p-11 + 0x1p-40),
                           1.0 + 0x1p-8 + 0x1p-40,
                           1.0 + 0x1p-8 - 0x1p-40,
                           1.0 + 0x1p-11,
                           65520.0 - 0x1p-30,
                           65520.0,
                           1e300,
                           -1e300,
                           1e-300,
                           -1e-300,
                           0.0,
                           -0.0,
                           0x1p-25 + 0x1p-60,
                           std::numeric_limits<double>::infinity()};
  std::mt19937_64 rng(11);
  for (int i = 0; i < 100000; ++i) {
    // Near the halves' range: exponents within f32's, random mantissas.
    const double m = 1.0 + std::ldexp(static_cast<double>(rng() >> 12), -52);
    const int e = static_cast<int>(rng() % 300) - 150;
    d.push_back((rng() & 1 ? -1.0 : 1.0) * std::ldexp(m, e));
  }
  // bf16's reference: the two bf16 values around d, compared in double.
  auto bf16Of = [](double x) {
    uint16_t lo = static_cast<uint16_t>(bitsOfF32(static_cast<float>(x)) >> 16);
    while (std::fabs(static_cast<double>(bf16ToF32(lo))) > std::fabs(x))
      --lo; // magnitude down: sign-magnitude bits
    const uint16_t hi = lo + 1;
    const double dhi =
        std::isinf(bf16ToF32(hi)) ? std::ldexp(1.0, 128) : bf16ToF32(hi);
    const double below = std::fabs(x) - std::fabs(double(bf16ToF32(lo)));
    const double above = std::fabs(dhi) - std::fabs(x);
    return below < above ? lo : above < below ? hi : (lo & 1 ? hi : lo);
  };
  const int64_t n = static_cast<int64_t>(d.size());
  const Tensor in = Tensor::fromVector<double>(DType::F64, {n}, d);
  const Tensor toF16 =
      runOp("cast", {in}, {{DType::F16, {n}}}, Attrs().s("to", "f16"))[0];
  const Tensor toBf16 =
      runOp("cast", {in}, {{DType::BF16, {n}}}, Attrs().s("to", "bf16"))[0];
  const Tensor toF32 =
      runOp("cast", {in}, {{DType::F32, {n}}}, Attrs().s("to", "f32"))[0];
  for (int64_t i = 0; i < n; ++i) {
    const _Float16 ref = static_cast<_Float16>(d[i]);
    uint16_t want;
    std::memcpy(&want, &ref, 2);
    ASSERT_EQ(toF16.data<uint16_t>()[i], want) << "f64 " << d[i];
    if (!std::isinf(d[i]))
      ASSERT_EQ(toBf16.data<uint16_t>()[i], bf16Of(d[i])) << "f64 " << d[i];
    ASSERT_EQ(bitsOfF32(toF32.data<float>()[i]),
              bitsOfF32(static_cast<float>(d[i])));
  }
  EXPECT_EQ(toF16.data<uint16_t>()[0],
            0x3c01); // not the double rounding's 0x3c00
  // Every half widens to f64 exactly.
  for (DType h : {DType::BF16, DType::F16}) {
    Tensor all(h, {0x10000});
    for (uint32_t b = 0; b < 0x10000; ++b)
      all.data<uint16_t>()[b] = static_cast<uint16_t>(b);
    Tensor up = runOp("cast", {all}, {{DType::F64, {0x10000}}},
                      Attrs().s("to", "f64"))[0];
    for (uint32_t b = 0; b < 0x10000; ++b) {
      const double want = halfToF32(h, static_cast<uint16_t>(b));
      const double got = up.data<double>()[b];
      ASSERT_TRUE(got == want || (std::isnan(got) && std::isnan(want)))
          << dtypeName(h) << " bits " << b;
    }
  }
}

TEST(HalfFloat, ArithmeticOnHalvesIsRefused) {
  Tensor a = halves(DType::BF16, {1.0f, 2.0f});
  std::shared_ptr<const Program> prog;
  Status s = buildOneOp("mul", {a, a}, {{DType::BF16, {2}}}, {}, prog);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("operand 0 has dtype bf16"), std::string::npos)
      << s.message();
  // Moving halves is not arithmetic.
  Tensor moved = runOp("transpose", {halves(DType::F16, {1, 2, 3, 4, 5, 6})},
                       {{DType::F16, {6}}}, Attrs().is("perm", {0}))[0];
  EXPECT_EQ(bitsOf(moved), bitsOf(halves(DType::F16, {1, 2, 3, 4, 5, 6})));
}

TEST(HalfFloat, NpyAndSafetensorsHoldHalves) {
  Tensor f16 = halves(DType::F16, {0.5f, -3.25f, 65504.0f});
  Tensor back;
  std::string img = encodeNpy(f16);
  EXPECT_NE(img.find("'<f2'"), std::string::npos);
  ASSERT_TRUE(parseNpy(img.data(), img.size(), "mem", back).isOk());
  EXPECT_EQ(back.dtype(), DType::F16);
  EXPECT_EQ(bitsOf(back), bitsOf(f16));
  // numpy has no bf16: written as f32, exactly.
  Tensor bf = halves(DType::BF16, {0.5f, -3.25f, 1e30f});
  img = encodeNpy(bf);
  ASSERT_TRUE(parseNpy(img.data(), img.size(), "mem", back).isOk());
  ASSERT_EQ(back.dtype(), DType::F32);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(back.data<float>()[i], bf16ToF32(bf.data<uint16_t>()[i]));
  // safetensors names them BF16 and F16.
  std::vector<size_t> order;
  std::vector<std::pair<uint64_t, uint64_t>> offsets;
  std::string file = encodeSafetensorsHeader(
      {{"w", DType::BF16, bf.shape(), bf.data()},
       {"v", DType::F16, f16.shape(), f16.data()}},
      {}, order, offsets);
  EXPECT_NE(file.find("\"BF16\""), std::string::npos);
  const size_t dataStart = file.size();
  file.resize(dataStart + 12);
  std::memcpy(&file[dataStart + offsets[0].first], bf.data(), 6);
  std::memcpy(&file[dataStart + offsets[1].first], f16.data(), 6);
  SafetensorsIndex index;
  Status st = parseSafetensors(reinterpret_cast<const unsigned char *>(file.data()),
                               file.size(), "mem", index);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(index.tensors.at("w").dtype, DType::BF16);
  EXPECT_EQ(index.tensors.at("v").dtype, DType::F16);
  EXPECT_EQ(index.tensors.at("v").end - index.tensors.at("v").begin, 6u);
}

} // namespace
