//===- Bf16MatMul.cpp - bf16 GEMMs on oneDNN ------------------------------===//
#include "Bf16MatMul.h"
#include "tessel/ops/Broadcast.h"
#include "DnnlContext.h"
#include "ThreadPool.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tessel::runtime::cpu {

using dt = dnnl::memory::data_type;

namespace {

const char *isaName(unsigned isa) {
  switch (isa) {
  case dnnl_cpu_isa_sse41:
    return "sse41";
  case dnnl_cpu_isa_avx:
    return "avx";
  case dnnl_cpu_isa_avx2:
    return "avx2";
  case dnnl_cpu_isa_avx512_core:
    return "avx512_core";
  case dnnl_cpu_isa_avx512_core_vnni:
    return "avx512_core_vnni";
  default:
    return "an ISA without bf16 dot products";
  }
}

/// Row-major strides of `dims`.
dnnl::memory::dims denseStrides(const dnnl::memory::dims &dims) {
  dnnl::memory::dims s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    s[i - 1] = s[i] * dims[i];
  return s;
}

/// `batch` with leading 1s up to `batchRank` dims, then `rows`, `cols`.
dnnl::memory::dims batched(const Shape &batch, size_t batchRank, int64_t rows,
                           int64_t cols) {
  dnnl::memory::dims d(batchRank - batch.size(), 1);
  d.insert(d.end(), batch.begin(), batch.end());
  d.push_back(rows);
  d.push_back(cols);
  return d;
}

} // namespace

bool bf16GemmsAvailable(std::string &why) {
  const char *env = std::getenv("TESSEL_BF16");
  if (env && std::string(env) == "emulate") {
    why = "TESSEL_BF16=emulate";
    return false;
  }
  const unsigned isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  const unsigned need = dnnl_cpu_isa_avx512_core_bf16;
  if ((isa & need) == need)
    return true;
  why = std::string("oneDNN's ISA on this CPU is ") + isaName(isa);
  return false;
}

bool bf16KernelsUsable() {
  std::string why;
  if (bf16GemmsAvailable(why))
    return true;
  static std::atomic<bool> said{false};
  if (!said.exchange(true))
    std::fprintf(stderr,
                 "tessel: remark: GEMMs and convolutions with bf16 operands "
                 "run in f32 on the rounded values (the same numbers, no "
                 "speed-up): %s\n",
                 why.c_str());
  return false;
}

void toBf16(const float *src, uint16_t *dst, int64_t n, ThreadPool &pool) {
  pool.parallelFor(n, 1 << 16, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      uint32_t u;
      std::memcpy(&u, src + i, sizeof u);
      // A NaN whose payload lies in the low half stays a NaN (quiet).
      const uint32_t nan = (u & 0x7fffffffu) > 0x7f800000u ? 0x40u : 0u;
      dst[i] = static_cast<uint16_t>((u >> 16) | nan);
    }
  });
}

struct Bf16MatMul::Impl {
  std::shared_ptr<DnnlContext> ctx;
  dnnl::matmul primitive;
  dnnl::memory::desc a, b, y;
  bool addsC = false;
  std::string kernel;
};

Bf16MatMul::Bf16MatMul(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
Bf16MatMul::~Bf16MatMul() = default;

std::unique_ptr<Bf16MatMul> Bf16MatMul::create(std::shared_ptr<DnnlContext> ctx,
                                               const Program &prog,
                                               const Op &op) {
  if (!ctx || op.operands.size() < 2 || op.results.size() != 1)
    return nullptr;
  const BufferInfo &a = prog.buffers[op.operands[0]],
                   &b = prog.buffers[op.operands[1]],
                   &y = prog.buffers[op.results[0]];
  // Marked f32 operands read as bf16 with an f32 result, or a half GEMM's
  // own bf16 or f16 operands and result.
  const DType t = y.dtype;
  if (a.dtype != t || b.dtype != t ||
      (t != DType::F32 && t != DType::BF16 && t != DType::F16) ||
      a.numel == 0 || b.numel == 0 || y.numel == 0)
    return nullptr;
  const dt src = t == DType::F16 ? dt::f16 : dt::bf16;
  const dt dst = t == DType::F32 ? dt::f32 : src;
  auto impl = std::make_unique<Impl>();
  impl->ctx = ctx;
  dnnl::primitive_attr attr;
  dnnl::memory::dims ad, bd, yd, as, bs;
  if (op.kind == OpKind::MatMul) {
    if (a.shape.size() < 2 || b.shape.size() < 2)
      return nullptr; // vectors: the f32 GEMM
    const MatMulDims md = matmulDims(a.shape, b.shape, y.shape);
    if (md.bCount == 1 && md.aCount == md.batches) {
      // B shared by every batch: A's batch folds into M.
      ad = {md.m * md.batches, md.k};
      bd = {md.k, md.n};
      yd = {md.m * md.batches, md.n};
    } else {
      const size_t rank = md.outBatch.size();
      ad = batched(md.aBatch, rank, md.m, md.k);
      bd = batched(md.bBatch, rank, md.k, md.n);
      yd = batched(md.outBatch, rank, md.m, md.n);
    }
    as = denseStrides(ad);
    bs = denseStrides(bd);
  } else if (op.kind == OpKind::Gemm) {
    const int64_t m = op.transA ? a.shape[1] : a.shape[0];
    const int64_t k = op.transA ? a.shape[0] : a.shape[1];
    const int64_t n = op.transB ? b.shape[0] : b.shape[1];
    ad = {m, k};
    bd = {k, n};
    yd = {m, n};
    as = op.transA ? dnnl::memory::dims{1, m} : dnnl::memory::dims{k, 1};
    bs = op.transB ? dnnl::memory::dims{1, k} : dnnl::memory::dims{n, 1};
    if (op.alpha != 1.0f)
      attr.set_output_scales(0, {op.alpha});
    impl->addsC = op.operands.size() > 2 && op.beta != 0.0f;
    if (impl->addsC) {
      dnnl::post_ops post;
      post.append_sum(op.beta);
      attr.set_post_ops(post);
    }
  } else {
    return nullptr;
  }
  try {
    impl->a = dnnl::memory::desc(ad, src, as);
    impl->b = dnnl::memory::desc(bd, src, bs);
    impl->y = dnnl::memory::desc(yd, dst, denseStrides(yd));
    dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(impl->a, impl->b, impl->y), attr, ctx->engine);
    impl->kernel = pd.impl_info_str();
    // The reference kernel would be far slower than the f32 GEMM.
    if (impl->kernel.find("ref") != std::string::npos)
      return nullptr;
    impl->primitive = dnnl::matmul(pd);
  } catch (const dnnl::error &) {
    return nullptr;
  }
  return std::unique_ptr<Bf16MatMul>(new Bf16MatMul(std::move(impl)));
}

Status Bf16MatMul::run(const uint16_t *a, const uint16_t *b, void *y) {
  try {
    const dnnl::engine &eng = impl->ctx->engine;
    impl->primitive.execute(
        impl->ctx->stream,
        {{DNNL_ARG_SRC, dnnl::memory(impl->a, eng, const_cast<uint16_t *>(a))},
         {DNNL_ARG_WEIGHTS,
          dnnl::memory(impl->b, eng, const_cast<uint16_t *>(b))},
         {DNNL_ARG_DST, dnnl::memory(impl->y, eng, y)}});
    impl->ctx->stream.wait();
    return Status::ok();
  } catch (const dnnl::error &e) {
    return Status::error(std::string("oneDNN bf16 matmul failed: ") + e.what());
  }
}

bool Bf16MatMul::addsC() const { return impl->addsC; }
const char *Bf16MatMul::kernelName() const { return impl->kernel.c_str(); }

} // namespace tessel::runtime::cpu
