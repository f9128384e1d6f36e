//===- gemm_rates.cpp - oneDNN's GEMMs on GPT-2-small's inference shapes --===//
//
// The GEMM library's speed on the shapes of GPT-2-small inference at seq 128
// (M = 128; the layers' K x N and the tied head's, B transposed), one
// thread, GFLOP/s (median of 9 after a warm-up): `dnnl_sgemm` (what
// runtime/cpu/Gemm.cpp runs), oneDNN's matmul primitive with its weights
// reordered once into the layout it picks, and Tessel's PackedGemm (weights
// packed once; what constant weights take on CPUs without AVX-512) with the
// largest difference from dnnl_sgemm's result. bench/run-gemm-rates prints
// ONNX Runtime's MLAS beside them, in the same run (docs/fusion.md, "On an
// AVX2-only EPYC").
//
//   ninja -C build gemm_rates && OMP_NUM_THREADS=1 build/bin/gemm_rates
//
//===----------------------------------------------------------------------===//
#include "PackedGemm.h"
#include "ThreadPool.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

template <typename F> double medianMs(F f) {
  f();
  std::vector<double> t;
  for (int r = 0; r < 9; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - t0)
                    .count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Shape {
  int64_t m, k, n;
  bool transB;
};

} // namespace

int main() {
  const Shape shapes[] = {{128, 768, 2304, false},
                          {128, 768, 768, false},
                          {128, 768, 3072, false},
                          {128, 3072, 768, false},
                          {128, 768, 50257, true}};
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  tessel::runtime::cpu::ThreadPool pool(1);
  std::printf("| M x K x N | B | dnnl_sgemm GFLOP/s | matmul primitive "
              "GFLOP/s (%s) | PackedGemm GFLOP/s | max diff |\n"
              "|---|---|---|---|---|---|\n",
              "weights reordered once");
  for (const Shape &sh : shapes) {
    std::vector<float> a(sh.m * sh.k), b(sh.k * sh.n), c(sh.m * sh.n);
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = float(i % 17) * 0.01f - 0.08f;
    for (size_t i = 0; i < b.size(); ++i)
      b[i] = float(i % 13) * 0.01f - 0.06f;
    const double flop = 2.0 * sh.m * sh.k * sh.n;
    const int64_t ldb = sh.transB ? sh.k : sh.n;
    double sgemm = medianMs([&] {
      dnnl_sgemm('N', sh.transB ? 'T' : 'N', sh.m, sh.n, sh.k, 1.0f, a.data(),
                 sh.k, b.data(), ldb, 0.0f, c.data(), sh.n);
    });
    dnnl::memory::desc ad({sh.m, sh.k}, dt::f32, tag::ab),
        bd({sh.k, sh.n}, dt::f32, tag::any), cd({sh.m, sh.n}, dt::f32, tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(ad, bd, cd), eng);
    dnnl::memory am(ad, eng, a.data()), cm(cd, eng, c.data());
    dnnl::memory plain({{sh.k, sh.n}, dt::f32, sh.transB ? tag::ba : tag::ab},
                       eng, b.data());
    dnnl::memory bm(pd.weights_desc(), eng);
    dnnl::reorder(plain, bm).execute(s, plain, bm);
    s.wait();
    dnnl::matmul mm(pd);
    double prim = medianMs([&] {
      mm.execute(
          s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
      s.wait();
    });
    std::vector<float> expect(c.size()), got(c.size());
    dnnl_sgemm('N', sh.transB ? 'T' : 'N', sh.m, sh.n, sh.k, 1.0f, a.data(),
               sh.k, b.data(), ldb, 0.0f, expect.data(), sh.n);
    std::string packedRate = "n/a (no AVX2 and FMA)", diff = "";
    if (auto packed = tessel::runtime::cpu::PackedGemm::create(
            b.data(), sh.k, sh.n, sh.transB)) {
      double ms = medianMs([&] {
        packed->multiply(sh.m, a.data(), sh.k, 1.0f, 0.0f, got.data(), sh.n,
                         pool);
      });
      double d = 0;
      for (size_t i = 0; i < got.size(); ++i)
        d = std::max(d, double(std::fabs(got[i] - expect[i])));
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.1f", flop / ms / 1e6);
      packedRate = buf;
      std::snprintf(buf, sizeof buf, "%.1e", d);
      diff = buf;
    }
    std::printf("| %lld x %lld x %lld | %s | %.1f | %.1f (%s) | %s | %s |\n",
                (long long)sh.m, (long long)sh.k, (long long)sh.n,
                sh.transB ? "transposed" : "plain", flop / sgemm / 1e6,
                flop / prim / 1e6, pd.impl_info_str(), packedRate.c_str(),
                diff.c_str());
  }
  return 0;
}
