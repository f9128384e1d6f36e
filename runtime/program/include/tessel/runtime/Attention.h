//===- Attention.h - the geometry of attention and attention_grad -*- C++
//-*-===//
//
// The geometry of a fused attention instruction (dialects/tessel/
// TesselOps.td, TrainingOps.td), worked out once from its operands' shapes
// by the load-time checks and by both backends' kernels (cpu/Attention.cpp,
// cuda/Attention.cpp):
//
//   attention      q [L.., S, D], kt [L.., D, T], v [L.., T, Dv]
//                  (, mask -> [L.., S, T]) (, nan_fill []) (, keep -> [L..,
//                  S, T]) -> out, lse
//   attention_grad q, kt, v, out [L.., S, Dv], lse [L.., S], grad
//                  (, mask) (, nan_fill) (, keep) -> dq, dkt, dv
//
// With `has_masked_score`, a score whose mask is -inf is `masked_score`
// instead of -inf (the exporters' where(keep, s, c) with a finite c); with
// `has_keep` too, a score whose bool `keep` is false is `masked_score` plus
// its mask (where(keep, s, c) + mask).
//
// The leading dims L.. flatten to `batch` (row-major). The mask broadcasts
// (numpy), so its element of (b, i, j) is at maskOffset(b) + i rowStride +
// j colStride, a broadcast dim's stride being 0; keep's likewise.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_ATTENTION_H
#define TESSEL_RUNTIME_ATTENTION_H

#include "tessel/runtime/Program.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace tessel::runtime {

struct AttentionDims {
  /// The most leading dims a mask may broadcast over.
  static constexpr int kMaxLead = 6;
  int64_t batch = 1, s = 0, t = 0, d = 0, dv = 0;
  int lead = 0;
  int64_t leadSize[kMaxLead] = {};
  int64_t maskLeadStride[kMaxLead] = {};
  int64_t maskRowStride = 0, maskColStride = 0;
  int64_t keepLeadStride[kMaxLead] = {};
  int64_t keepRowStride = 0, keepColStride = 0;
  float scale = 1.0f;

  /// The mask's element offset of batch entry `b` (row 0, column 0).
  int64_t maskOffset(int64_t b) const { return offset(b, maskLeadStride); }
  /// keep's.
  int64_t keepOffset(int64_t b) const { return offset(b, keepLeadStride); }

private:
  int64_t offset(int64_t b, const int64_t *leadStride) const {
    int64_t off = 0;
    for (int k = lead - 1; k >= 0; --k) {
      off += (b % leadSize[k]) * leadStride[k];
      b /= leadSize[k];
    }
    return off;
  }
};

/// The operands' positions: mask, nan_fill and keep follow the three
/// (forward) or six (backward) tensors, each where present (`has_mask`,
/// `has_nan_fill`, `has_keep`); -1 where absent.
struct AttentionOperands {
  int mask = -1, fill = -1, keep = -1;
  /// `has_masked_score`: the scores whose mask is -inf are `maskedScore`
  /// (a replace, not an add), a finite constant; with `keep`, the scores
  /// whose keep is false are `maskedScore` plus their mask.
  bool replaceMasked = false;
  float maskedScore = 0.0f;
};
inline AttentionOperands attentionOperands(const Op &op) {
  AttentionOperands a;
  int next = op.kind == OpKind::AttentionGrad ? 6 : 3;
  if (op.intAttr("has_mask", 0) != 0)
    a.mask = next++;
  if (op.intAttr("has_nan_fill", 0) != 0)
    a.fill = next++;
  if (op.intAttr("has_keep", 0) != 0)
    a.keep = next;
  a.replaceMasked = op.intAttr("has_masked_score", 0) != 0;
  a.maskedScore = op.floatAttr("masked_score", 0.0f);
  return a;
}

/// The operands that have q's element type (f32, bf16 or f16): q, kt, v
/// and, in attention_grad, the forward's result (3) and grad (5); lse,
/// mask and nan_fill are f32 in every attention.
inline std::vector<int> attentionTypedOperands(OpKind kind) {
  return kind == OpKind::AttentionGrad ? std::vector<int>{0, 1, 2, 3, 5}
                                       : std::vector<int>{0, 1, 2};
}

/// The strides of `m` broadcast (numpy) to `scores` (a broadcast dim's 0,
/// aligned right) into `stride` [scores' rank]; false where it does not
/// broadcast.
inline bool stridesToScores(const std::vector<int64_t> &m,
                            const std::vector<int64_t> &scores,
                            std::vector<int64_t> &stride) {
  const size_t r = scores.size();
  if (m.size() > r)
    return false;
  stride.assign(r, 0);
  int64_t step = 1;
  for (size_t k = m.size(); k-- > 0;) {
    const size_t at = r - m.size() + k;
    if (m[k] != 1 && m[k] != scores[at])
      return false;
    stride[at] = m[k] == 1 ? 0 : step;
    step *= m[k];
  }
  return true;
}

/// Fills `dims` from the shapes of q, kt, v, the mask and keep (null
/// without one); an empty string when they fit, else what does not.
inline std::string
makeAttentionDims(const std::vector<int64_t> &q, const std::vector<int64_t> &kt,
                  const std::vector<int64_t> &v,
                  const std::vector<int64_t> *mask, AttentionDims &dims,
                  const std::vector<int64_t> *keep = nullptr) {
  const size_t r = q.size();
  if (r < 2 || kt.size() != r || v.size() != r)
    return "q, kt and v must have one rank of at least 2";
  if (r - 2 > static_cast<size_t>(AttentionDims::kMaxLead))
    return "more than 6 leading dims";
  for (size_t k = 0; k + 2 < r; ++k)
    if (kt[k] != q[k] || v[k] != q[k])
      return "q, kt and v must have the same leading dims";
  dims = AttentionDims{};
  dims.lead = static_cast<int>(r - 2);
  for (size_t k = 0; k + 2 < r; ++k) {
    dims.leadSize[k] = q[k];
    dims.batch *= q[k];
  }
  dims.s = q[r - 2];
  dims.d = q[r - 1];
  dims.t = kt[r - 1];
  dims.dv = v[r - 1];
  if (kt[r - 2] != dims.d)
    return "kt's dim " + std::to_string(r - 2) + " must be q's head dim " +
           std::to_string(dims.d);
  if (v[r - 2] != dims.t)
    return "v's dim " + std::to_string(r - 2) + " must be kt's " +
           std::to_string(dims.t) + " keys";
  std::vector<int64_t> scores(q.begin(), q.end() - 1);
  scores.push_back(dims.t);
  // Each operand's strides into its lead, row and column fields.
  auto strides = [&](const std::vector<int64_t> &m, int64_t *lead, int64_t &row,
                     int64_t &col) {
    std::vector<int64_t> stride;
    if (!stridesToScores(m, scores, stride))
      return false;
    std::copy(stride.begin(), stride.end() - 2, lead);
    row = stride[r - 2];
    col = stride[r - 1];
    return true;
  };
  if (mask && !strides(*mask, dims.maskLeadStride, dims.maskRowStride,
                       dims.maskColStride))
    return "the mask does not broadcast to the scores";
  if (keep && !strides(*keep, dims.keepLeadStride, dims.keepRowStride,
                       dims.keepColStride))
    return "keep does not broadcast to the scores";
  return "";
}

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_ATTENTION_H
