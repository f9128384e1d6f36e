//===- ExamplePlugin.cpp - one plugin, the four extension points ----------===//
//
// The worked examples of docs/extending.md, in one shared library that
// tesselc and tessel-run load with --load-plugin:
//
//   op             example.FancyGelu: ONNX FancyGelu of domain com.example
//                  (since 1), x * sigmoid(alpha x); its sharding rule
//                  (elementwise), gradient rule and CPU kernel; and
//                  example.RoundFp16, the rounding to the nearest half
//                  precision value that the handler below uses;
//   schedule       eager-1f1b: 1F1B with one more warm-up forward per rank;
//   grad handler   fp16-ef: all-reduce in half precision with error
//                  feedback (the rounding residual kept for the next step);
//   parallel mode  tp2d: an axis of size q*q that is q row groups by q
//                  column groups (the seed's 2D tensor parallelism).
//
// It includes only tessel/Extension/ and links nothing of Tessel's.
//
//===----------------------------------------------------------------------===//

#include "tessel/Extension/Plugin.h"

#include <algorithm>
#include <cmath>

using namespace tessel::ext;

namespace {

//===----------------------------------------------------------------------===//
// Op: FancyGelu
//===----------------------------------------------------------------------===//

std::string sameFloatType(const std::vector<TensorType> &in, size_t n,
                          std::vector<TensorType> &out) {
  if (in.size() != n)
    return "takes " + std::to_string(n) + " operand(s), got " +
           std::to_string(in.size());
  for (const TensorType &t : in)
    if (t != in[0] || t.dtype != "f32")
      return "operands must be f32 tensors of one shape, got " +
             toString(t);
  out = {in[0]};
  return "";
}

/// An elementwise op of one f32 operand: its type and sharding rules.
CustomOp unaryFloatOp(std::string name) {
  CustomOp op;
  op.name = std::move(name);
  op.inferTypes = [](const std::vector<TensorType> &in, const Attrs &,
                     std::vector<TensorType> &out) {
    return sameFloatType(in, 1, out);
  };
  op.shardingRule = [](const std::vector<TensorType> &in,
                       const std::vector<TensorType> &out, const Attrs &) {
    return elementwiseRule(in, out);
  };
  return op;
}

CustomOp fancyGelu() {
  CustomOp op = unaryFloatOp("example.FancyGelu");
  op.onnx = {"com.example", "FancyGelu", 1,
             {{"alpha", AttrValue::ofFloat(1.702), false}}};
  // d/dx x s(ax) = s + a x s (1 - s), s = sigmoid(a x), with Tessel's
  // elementwise ops.
  op.gradient = [](GraphBuilder &b, const GradientArgs &g,
                   std::vector<Value> &dx) -> std::string {
    const double alpha = floatAttr(g.attrs, "alpha", 1.702);
    Value x = g.operands[0], dy = g.resultGrads[0];
    Value ax = b.create1("tessel.mul", {x, b.scalar(alpha, "f32")});
    Value s = b.create1("tessel.sigmoid", {ax});
    Value oneMinus = b.create1("tessel.sub", {b.scalar(1.0, "f32"), s});
    Value t = b.create1("tessel.mul",
                        {ax, b.create1("tessel.mul", {s, oneMinus})});
    Value d = b.create1("tessel.add", {s, t});
    Value r = b.create1("tessel.mul", {dy, d});
    if (!r)
      return b.error();
    dx.push_back(r);
    return "";
  };
  op.cpuKernel = [](const KernelInstance &k, CpuKernelFn &run) -> std::string {
    const float alpha = float(floatAttr(k.attrs, "alpha", 1.702));
    const int64_t n = k.operands.at(0).numel();
    run = [alpha, n](const void *const *in, void *const *out) {
      const float *x = static_cast<const float *>(in[0]);
      float *y = static_cast<float *>(out[0]);
      for (int64_t i = 0; i < n; ++i)
        y[i] = x[i] / (1.0f + std::exp(-alpha * x[i]));
    };
    return "";
  };
  return op;
}

//===----------------------------------------------------------------------===//
// Op: RoundFp16 (for the handler)
//===----------------------------------------------------------------------===//

/// x rounded to the nearest IEEE half value (ties to even), as a float;
/// beyond the half range: +-inf.
float roundToHalf(float x) {
  if (!std::isfinite(x) || x == 0.0f)
    return x;
  const float ax = std::fabs(x);
  if (ax >= 65520.0f)
    return std::copysign(INFINITY, x);
  int e;
  std::frexp(ax, &e); // ax = f * 2^e, f in [0.5, 1)
  // Half has 11 significant bits for normals (e >= -13), a fixed step of
  // 2^-24 for subnormals.
  const int exp = std::max(e - 11, -24);
  const float step = std::ldexp(1.0f, exp);
  return std::copysign(std::nearbyint(ax / step) * step, x);
}

CustomOp roundFp16() {
  CustomOp op = unaryFloatOp("example.RoundFp16");
  op.cpuKernel = [](const KernelInstance &k, CpuKernelFn &run) -> std::string {
    const int64_t n = k.operands.at(0).numel();
    run = [n](const void *const *in, void *const *out) {
      const float *x = static_cast<const float *>(in[0]);
      float *y = static_cast<float *>(out[0]);
      for (int64_t i = 0; i < n; ++i)
        y[i] = roundToHalf(x[i]);
    };
    return "";
  };
  return op;
}

//===----------------------------------------------------------------------===//
// Gradient handler: fp16-ef
//===----------------------------------------------------------------------===//

// Each rank sends its gradient plus the residual of the last step, rounded
// to half precision, and keeps what the rounding lost for the next step
// (error feedback, as in 1-bit Adam / PowerSGD's residuals); the reduced sum
// is rounded to half precision too, as a half all-reduce gives it. The
// runtime has no half buffers, so the all_reduce moves the half values as
// floats: the numbers are those of a half all-reduce, the bytes are not.
GradientHandlerDef fp16ErrorFeedback() {
  GradientHandlerDef h;
  h.name = "fp16-ef";
  h.description = "all-reduce in half precision with error feedback";
  h.handle = [](GraphBuilder &b, const GradientToReduce &g,
                Value &reduced) -> std::string {
    TensorType t = b.typeOf(g.gradient);
    Value err = b.state("fp16_ef." + std::to_string(g.index) + "." +
                            g.parameter,
                        t);
    Value sum = b.create1("tessel.add", {g.gradient, err});
    Value half = b.create1("example.RoundFp16", {sum});
    Value residual = b.create1("tessel.sub", {sum, half});
    if (!residual || !b.assign(err, residual))
      return b.error();
    reduced = b.create1("example.RoundFp16", {b.reduce(half)});
    return reduced ? "" : b.error();
  };
  return h;
}

//===----------------------------------------------------------------------===//
// Schedule: eager-1f1b
//===----------------------------------------------------------------------===//

// 1F1B (PipeDream-Flush) whose ranks run one more warm-up forward: rank r
// starts with min(p - r, m) forwards instead of min(p - 1 - r, m), then
// alternates forward and backward, then drains: one more activation in
// flight per rank, for a last stage that never waits on its forward. The seed's point: a new
// order of forward and backward passes is one generator.
ScheduleDef eagerOneFOneB() {
  ScheduleDef s;
  s.name = "eager-1f1b";
  s.description = "1F1B with one more warm-up forward per rank (plugin)";
  s.generate = [](const ScheduleParams &p,
                  std::vector<std::vector<ScheduleStep>> &perRank)
      -> std::string {
    if (p.chunks != 1)
      return "takes one chunk per rank, got " + std::to_string(p.chunks);
    using K = ScheduleStep::Kind;
    for (int32_t r = 0; r < p.ranks; ++r) {
      auto &steps = perRank[r];
      const int32_t m = p.microbatches;
      const int32_t warmup = std::min(p.ranks - r, m);
      for (int32_t mb = 0; mb < warmup; ++mb)
        steps.push_back({K::F, r, mb});
      for (int32_t i = 0; i < m - warmup; ++i) {
        steps.push_back({K::F, r, warmup + i});
        steps.push_back({K::BW, r, i});
      }
      for (int32_t mb = m - warmup; mb < m; ++mb)
        steps.push_back({K::BW, r, mb});
    }
    return "";
  };
  return s;
}

//===----------------------------------------------------------------------===//
// Parallel mode: tp2d
//===----------------------------------------------------------------------===//

// Colossal-AI's 2D tensor parallelism (its Initializer_2D): q*q ranks as a
// q x q grid, whose rows and columns are the groups of the row and column
// all-reduces (SUMMA). A `tp2d=4` axis is the two axes tp2d.row=2 and
// tp2d.col=2.
ParallelModeDef tensor2D() {
  ParallelModeDef m;
  m.name = "tp2d";
  m.description = "2D tensor parallelism: q*q ranks in q row and q column "
                  "groups";
  m.split = [](int64_t size,
               std::vector<std::pair<std::string, int64_t>> &axes)
      -> std::string {
    int64_t q = 1;
    while ((q + 1) * (q + 1) <= size)
      ++q;
    if (q * q != size)
      return "a tp2d axis needs a square size (4, 9, 16, ...), got " +
             std::to_string(size);
    axes = {{"row", q}, {"col", q}};
    return "";
  };
  return m;
}

} // namespace

TESSEL_PLUGIN("example", "1.0") {
  registrar.addOp(fancyGelu());
  registrar.addOp(roundFp16());
  registrar.addSchedule(eagerOneFOneB());
  registrar.addGradientHandler(fp16ErrorFeedback());
  registrar.addParallelMode(tensor2D());
}
