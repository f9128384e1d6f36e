//===- MlpFixture.h - A 2-layer MLP artifact for end-to-end tests -*- C++ -*-===//
#ifndef TESSEL_TEST_UNIT_RUNTIME_MLPFIXTURE_H
#define TESSEL_TEST_UNIT_RUNTIME_MLPFIXTURE_H

#include "TestUtil.h"

namespace tessel::runtime::test {

/// y = softmax(gelu(x @ w1 + b1) @ w2 + b2): matmul + add, gelu, gemm,
/// softmax, with weights in the safetensors file.
struct Mlp {
  static constexpr int64_t kBatch = 4, kIn = 8, kHidden = 32, kOut = 5;
  Tensor w1, b1, w2, b2;

  explicit Mlp(uint32_t seed) {
    std::mt19937 rng(seed);
    w1 = randomF32({kIn, kHidden}, rng, -0.5f, 0.5f);
    b1 = randomF32({kHidden}, rng, -0.5f, 0.5f);
    w2 = randomF32({kHidden, kOut}, rng, -0.5f, 0.5f);
    b2 = randomF32({kOut}, rng, -0.5f, 0.5f);
  }

  void build(ProgramBuilder &p) const {
    int x = p.addInput("x", DType::F32, {kBatch, kIn});
    int w1b = p.addWeight("fc1.weight", DType::F32, w1.shape(), w1.data());
    int b1b = p.addWeight("fc1.bias", DType::F32, b1.shape(), b1.data());
    int w2b = p.addWeight("fc2.weight", DType::F32, w2.shape(), w2.data());
    int b2b = p.addWeight("fc2.bias", DType::F32, b2.shape(), b2.data());
    int h0 = p.addBuffer(DType::F32, {kBatch, kHidden}, "h0");
    int h1 = p.addBuffer(DType::F32, {kBatch, kHidden}, "h1");
    int h2 = p.addBuffer(DType::F32, {kBatch, kHidden}, "h2");
    int z = p.addBuffer(DType::F32, {kBatch, kOut}, "z");
    int y = p.addBuffer(DType::F32, {kBatch, kOut}, "y");
    p.addOp("matmul", {x, w1b}, {h0}, {}, "fc1/MatMul");
    p.addOp("add", {h0, b1b}, {h1}, {}, "fc1/Add");
    p.addOp("gelu", {h1}, {h2}, {}, "act");
    p.addOp("gemm", {h2, w2b, b2b}, {z}, {}, "fc2/Gemm");
    p.addOp("softmax", {z}, {y}, Attrs().i("axis", -1), "softmax");
    p.addOutput("y", y);
    p.addOutput("logits", z);
  }

  /// Naive reference in double.
  std::vector<double> reference(const Tensor &x) const {
    std::vector<double> out;
    for (int64_t b = 0; b < kBatch; ++b) {
      std::vector<double> h(kHidden), z(kOut);
      for (int64_t j = 0; j < kHidden; ++j) {
        double s = b1.data<float>()[j];
        for (int64_t i = 0; i < kIn; ++i)
          s += double(x.data<float>()[b * kIn + i]) * w1.data<float>()[i * kHidden + j];
        h[j] = 0.5 * s * (1 + std::erf(s / std::sqrt(2.0)));
      }
      double m = -INFINITY, sum = 0;
      for (int64_t k = 0; k < kOut; ++k) {
        double s = b2.data<float>()[k];
        for (int64_t j = 0; j < kHidden; ++j)
          s += h[j] * w2.data<float>()[j * kOut + k];
        z[k] = s;
        m = std::max(m, s);
      }
      for (int64_t k = 0; k < kOut; ++k)
        sum += std::exp(z[k] - m);
      for (int64_t k = 0; k < kOut; ++k)
        out.push_back(std::exp(z[k] - m) / sum);
    }
    return out;
  }
};

} // namespace tessel::runtime::test

#endif // TESSEL_TEST_UNIT_RUNTIME_MLPFIXTURE_H
