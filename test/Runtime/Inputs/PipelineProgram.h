//===- PipelineProgram.h - Hand-built pipelined step programs ---*- C++ -*-===//
//
// What the pipeline lowering (docs/pipeline.md) writes, built by hand for
// the runtime's tests until tesselc does: a stack of P stages, stage s
// computing a = tanh(h W_s) on microbatches of R rows, trained by the loss
// 0.5 |a_last|^2 (so the last stage's output gradient is a itself). Rank s
// runs stage s's actions in GPipe or 1F1B order, every instruction tagged
// with its action (Instruction.action):
//   F s.k   (s = 0: h = rows of the weight x; else RECV from s-1)
//           z = h W_s, a = tanh(z); SEND a to s+1 unless last
//   B s.k   (last: g = a; else RECV g from s+1)
//           gz = g * (1 - a*a); unless s = 0: gh = gz W_s^T, SEND to s-1;
//           s = 0: dx += gz W_s^T
//   W s.k   dW_s += h^T gz
// Outputs: rank s "dw<s>", rank 0 also "dx". The one-rank program
// (`oneRank`) runs the same instructions for every stage in microbatch
// order (F of every stage, then B and W backwards, per microbatch, as a
// `--microbatches M` step does), so its outputs must equal the pipeline's
// bitwise.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TEST_RUNTIME_PIPELINEPROGRAM_H
#define TESSEL_TEST_RUNTIME_PIPELINEPROGRAM_H

#include "tessel/runtime/ArtifactBuilder.h"

#include <algorithm>
#include <string>
#include <vector>

namespace tessel::runtime::pipetest {

struct PipelineSpec {
  int stages = 2;
  int microbatches = 4;
  int64_t rows = 4;  // per microbatch
  int64_t width = 8; // every W_s is [width, width]
  bool oneF1B = true; // else GPipe
};

/// Deterministic small values (exact in f32).
inline std::vector<float> pipelineValues(int64_t n, int salt) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(((i * 37 + salt * 11) % 19) - 9) / 64.0f;
  return v;
}

/// Stage `s`'s actions in schedule order: (phase 'F' or 'B', microbatch).
inline std::vector<std::pair<char, int>> stageActions(const PipelineSpec &p,
                                                      int s) {
  const int m = p.microbatches;
  std::vector<std::pair<char, int>> a;
  const int warm = p.oneF1B ? std::min(p.stages - 1 - s, m) : m;
  for (int k = 0; k < warm; ++k)
    a.push_back({'F', k});
  for (int i = 0; i < m - warm; ++i) {
    a.push_back({'F', warm + i});
    a.push_back({'B', i});
  }
  for (int k = m - warm; k < m; ++k)
    a.push_back({'B', k});
  return a;
}

/// Tag of the message of microbatch k from stage s forward (dir 0) or
/// backward (dir 1).
inline int64_t pipelineTag(const PipelineSpec &p, int s, int k, int dir) {
  return (static_cast<int64_t>(s) * p.microbatches + k) * 2 + dir;
}

/// Fills `b` with rank `rank`'s program; with `oneRank`, the whole model on
/// one rank (rank must be 0).
inline void buildPipelineRank(const PipelineSpec &p, int rank, bool oneRank,
                              ProgramBuilder &b) {
  const int64_t R = p.rows, D = p.width;
  const int m = p.microbatches, last = p.stages - 1;
  int x = -1, ones = -1;
  std::vector<int> w(p.stages, -1), dw(p.stages, -1);
  const int s0 = oneRank ? 0 : rank, s1 = oneRank ? last : rank;
  std::vector<float> one(R * D, 1.0f);
  ones = b.addConstant(DType::F32, {R, D}, one.data(), "ones");
  for (int s = s0; s <= s1; ++s) {
    std::vector<float> ws = pipelineValues(D * D, s + 1);
    w[s] = b.addWeight("w" + std::to_string(s), DType::F32, {D, D}, ws.data());
  }
  if (s0 == 0) {
    std::vector<float> xs = pipelineValues(m * R * D, 0);
    x = b.addWeight("x", DType::F32, {m * R, D}, xs.data());
  }
  int dx = -1;
  // Per stage and microbatch: the input h and the activation a, kept from
  // F to B and W.
  std::vector<std::vector<int>> h(p.stages, std::vector<int>(m, -1)),
      a(h), g(h);
  auto F = [&](int s, int k) {
    const std::string name = "s" + std::to_string(s) + ".mb" + std::to_string(k);
    if (s == 0) {
      h[s][k] = b.addBuffer(DType::F32, {R, D});
      b.addOp("slice", {x}, {h[s][k]},
              Attrs().is("starts", {k * R, 0}).is("ends", {(k + 1) * R, D})
                  .is("steps", {1, 1}),
              name + ".input");
      b.setAction("F", s, k);
    } else if (!oneRank) {
      h[s][k] = b.addBuffer(DType::F32, {R, D});
      b.addOp("recv", {}, {h[s][k]},
              Attrs().i("peer", rank - 1).i("tag", pipelineTag(p, s - 1, k, 0)),
              name + ".recv_h");
      b.setAction("RECV", s, k);
    } else {
      h[s][k] = a[s - 1][k];
    }
    int z = b.addBuffer(DType::F32, {R, D});
    b.addOp("matmul", {h[s][k], w[s]}, {z}, {}, name + ".matmul");
    b.setAction("F", s, k);
    a[s][k] = b.addBuffer(DType::F32, {R, D});
    b.addOp("tanh", {z}, {a[s][k]}, {}, name + ".tanh");
    b.setAction("F", s, k);
    if (s < last && !oneRank) {
      b.addOp("send", {a[s][k]}, {},
              Attrs().i("peer", rank + 1).i("tag", pipelineTag(p, s, k, 0)),
              name + ".send_a");
      b.setAction("SEND", s, k);
    }
  };
  auto B = [&](int s, int k) {
    const std::string name = "s" + std::to_string(s) + ".mb" + std::to_string(k);
    int gs;
    if (s == last) {
      gs = a[s][k];
    } else if (!oneRank) {
      gs = b.addBuffer(DType::F32, {R, D});
      b.addOp("recv", {}, {gs},
              Attrs().i("peer", rank + 1).i("tag", pipelineTag(p, s + 1, k, 1)),
              name + ".recv_g");
      b.setAction("RECV", s, k);
    } else {
      gs = g[s + 1][k];
    }
    int aa = b.addBuffer(DType::F32, {R, D}), om = b.addBuffer(DType::F32, {R, D}),
        gz = b.addBuffer(DType::F32, {R, D}), gh = b.addBuffer(DType::F32, {R, D});
    b.addOp("mul", {a[s][k], a[s][k]}, {aa}, {}, name + ".aa");
    b.setAction("B", s, k);
    b.addOp("sub", {ones, aa}, {om}, {}, name + ".one_minus");
    b.setAction("B", s, k);
    b.addOp("mul", {gs, om}, {gz}, {}, name + ".gz");
    b.setAction("B", s, k);
    b.addOp("gemm", {gz, w[s]}, {gh}, Attrs().i("trans_b", 1), name + ".gh");
    b.setAction("B", s, k);
    if (s > 0) {
      if (!oneRank) {
        b.addOp("send", {gh}, {},
                Attrs().i("peer", rank - 1).i("tag", pipelineTag(p, s, k, 1)),
                name + ".send_g");
        b.setAction("SEND", s, k);
      }
      g[s][k] = gh;
    } else if (dx < 0) {
      dx = gh;
    } else {
      int acc = b.addBuffer(DType::F32, {R, D});
      b.addOp("add", {dx, gh}, {acc}, {}, name + ".dx");
      b.setAction("B", s, k);
      dx = acc;
    }
    int gw = b.addBuffer(DType::F32, {D, D});
    b.addOp("gemm", {h[s][k], gz}, {gw}, Attrs().i("trans_a", 1), name + ".gw");
    b.setAction("W", s, k);
    if (dw[s] < 0) {
      dw[s] = gw;
    } else {
      int acc = b.addBuffer(DType::F32, {D, D});
      b.addOp("add", {dw[s], gw}, {acc}, {}, name + ".dw");
      b.setAction("W", s, k);
      dw[s] = acc;
    }
  };
  if (oneRank) {
    for (int k = 0; k < m; ++k) {
      for (int s = 0; s <= last; ++s)
        F(s, k);
      for (int s = last; s >= 0; --s)
        B(s, k);
    }
  } else {
    for (auto [phase, k] : stageActions(p, rank))
      phase == 'F' ? F(rank, k) : B(rank, k);
  }
  for (int s = s0; s <= s1; ++s)
    b.addOutput("dw" + std::to_string(s), dw[s]);
  if (s0 == 0)
    b.addOutput("dx", dx);
}

} // namespace tessel::runtime::pipetest

#endif // TESSEL_TEST_RUNTIME_PIPELINEPROGRAM_H
