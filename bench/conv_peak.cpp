//===- conv_peak.cpp - oneDNN's convolution speed on ResNet-50's shapes ---===//
//
// The ceiling of a ResNet-50 training step on this CPU: forward, backward
// data and backward weights of ResNet-50's 3x3 and 1x1 convolutions (batch
// 8), one thread, in GFLOP/s, three ways: on plain NCHW (oneDNN's GEMM
// kernels), in the blocked layouts oneDNN picks (its direct JIT kernels;
// what runtime/cpu/ConvTraining.cpp runs 3x3 convs on), and Winograd
// F(4x4, 3x3) (TESSEL_WINOGRAD=1). Reorders excluded: this is the kernels'
// speed, the figure docs/training.md's bound on the step is computed from.
//
//   ninja -C build conv_peak && OMP_NUM_THREADS=1 build/bin/conv_peak
//
//===----------------------------------------------------------------------===//
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

double nowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Shape {
  int n, cin, cout, hw, k;
};

void fill(dnnl::memory &m) {
  float *p = static_cast<float *>(m.get_data_handle());
  size_t n = m.get_desc().get_size() / sizeof(float);
  for (size_t i = 0; i < n; ++i)
    p[i] = static_cast<float>(i % 7) * 0.1f;
}

void measure(const dnnl::engine &eng, dnnl::stream &s, const Shape &sh,
             const char *how, dnnl::algorithm alg, tag act, tag wt) {
  const int pad = sh.k / 2;
  dnnl::memory::dims x{sh.n, sh.cin, sh.hw, sh.hw}, w{sh.cout, sh.cin, sh.k, sh.k},
      y{sh.n, sh.cout, sh.hw, sh.hw}, st{1, 1}, dil{0, 0}, p{pad, pad};
  const double gflop = 2.0 * sh.n * sh.cout * sh.cin * sh.k * sh.k *
                       sh.hw * sh.hw / 1e9;
  try {
    dnnl::memory::desc xd(x, dt::f32, act), wd(w, dt::f32, wt), yd(y, dt::f32, act);
    dnnl::convolution_forward::primitive_desc fpd(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg,
                                        xd, wd, yd, st, dil, p, p),
        eng);
    dnnl::convolution_backward_data::primitive_desc bpd(
        dnnl::convolution_backward_data::desc(alg, xd, wd, yd, st, dil, p, p),
        eng, fpd);
    dnnl::convolution_backward_weights::primitive_desc wpd(
        dnnl::convolution_backward_weights::desc(alg, xd, wd, yd, st, dil, p, p),
        eng, fpd);
    dnnl::memory X(fpd.src_desc(), eng), W(fpd.weights_desc(), eng),
        Y(fpd.dst_desc(), eng), DX(bpd.diff_src_desc(), eng),
        DY(bpd.diff_dst_desc(), eng), DW(wpd.diff_weights_desc(), eng);
    for (dnnl::memory *m : {&X, &W, &Y, &DX, &DY, &DW})
      fill(*m);
    dnnl::convolution_forward f(fpd);
    dnnl::convolution_backward_data bd(bpd);
    dnnl::convolution_backward_weights bw(wpd);
    double best[3] = {1e30, 1e30, 1e30};
    for (int rep = 0; rep < 5; ++rep) {
      double t0 = nowMs();
      f.execute(s, {{DNNL_ARG_SRC, X}, {DNNL_ARG_WEIGHTS, W}, {DNNL_ARG_DST, Y}});
      s.wait();
      double t1 = nowMs();
      bd.execute(s, {{DNNL_ARG_DIFF_SRC, DX}, {DNNL_ARG_WEIGHTS, W},
                     {DNNL_ARG_DIFF_DST, DY}});
      s.wait();
      double t2 = nowMs();
      bw.execute(s, {{DNNL_ARG_SRC, X}, {DNNL_ARG_DIFF_WEIGHTS, DW},
                     {DNNL_ARG_DIFF_DST, DY}});
      s.wait();
      double t3 = nowMs();
      best[0] = std::min(best[0], t1 - t0);
      best[1] = std::min(best[1], t2 - t1);
      best[2] = std::min(best[2], t3 - t2);
    }
    std::printf("| %dx%d %d->%d %dx%d | %s | %.0f | %.0f | %.0f | %s |\n", sh.k,
                sh.k, sh.cin, sh.cout, sh.hw, sh.hw, how, gflop / best[0] * 1e3,
                gflop / best[1] * 1e3, gflop / best[2] * 1e3,
                fpd.impl_info_str());
  } catch (const dnnl::error &e) {
    std::printf("| %dx%d %d->%d %dx%d | %s | n/a (%s) | | | |\n", sh.k, sh.k,
                sh.cin, sh.cout, sh.hw, sh.hw, how, e.what());
  }
}

} // namespace

int main() {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const Shape shapes[] = {
      {8, 64, 64, 56, 3},   {8, 128, 128, 28, 3}, {8, 256, 256, 14, 3},
      {8, 512, 512, 7, 3},  {8, 256, 64, 56, 1},  {8, 64, 256, 56, 1},
      {8, 1024, 256, 14, 1}, {8, 2048, 512, 7, 1},
  };
  std::printf("oneDNN convolutions, batch 8, GFLOP/s (best of 5)\n\n");
  std::printf("| conv | kernels | forward | backward data | backward weights "
              "| forward implementation |\n|---|---|---|---|---|---|\n");
  for (const Shape &sh : shapes) {
    measure(eng, s, sh, "NCHW", dnnl::algorithm::convolution_direct, tag::nchw,
            tag::oihw);
    measure(eng, s, sh, "blocked", dnnl::algorithm::convolution_direct,
            tag::any, tag::any);
    if (sh.k == 3 && sh.hw >= 14)
      measure(eng, s, sh, "Winograd", dnnl::algorithm::convolution_winograd,
              tag::any, tag::any);
  }
}
