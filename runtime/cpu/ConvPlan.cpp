//===- ConvPlan.cpp - Layouts and fusions around oneDNN convs -------------===//
#include "ConvPlan.h"

#include <algorithm>

namespace tessel::runtime::cpu {

namespace {

bool isGraphInputOrOutput(const Program &prog, int id) {
  for (const auto &[name, b] : prog.inputs)
    if (b == id)
      return true;
  for (const auto &[name, b] : prog.outputs)
    if (b == id)
      return true;
  return false;
}

/// Ops that compute each element from the same element of their operands,
/// so any layout shared by all of them gives the same numbers.
bool isLayoutAgnostic(const Program &prog, const Op &op) {
  switch (op.kind) {
  case OpKind::Relu:
  case OpKind::Neg:
  case OpKind::Sigmoid:
  case OpKind::Tanh:
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Max:
  case OpKind::Min:
    break;
  default:
    return false;
  }
  if (op.results.size() != 1)
    return false;
  const BufferInfo &r = prog.buffers[op.results[0]];
  for (int id : op.operands) {
    const BufferInfo &b = prog.buffers[id];
    if (b.shape != r.shape || b.dtype != r.dtype)
      return false;
  }
  return true;
}

} // namespace

std::vector<int> planReluFusion(const Program &prog,
                                const std::vector<bool> &eligible) {
  const int nOps = static_cast<int>(prog.ops.size());
  const size_t nBuf = prog.buffers.size();
  // Live ranges of arena buffers in op indices: [first write, last read];
  // graph inputs from the start, graph outputs to the end.
  std::vector<int> first(nBuf, nOps), last(nBuf, -1), readers(nBuf, 0);
  for (int i = 0; i < nOps; ++i) {
    for (int id : prog.ops[i].results)
      first[id] = std::min(first[id], i);
    for (int id : prog.ops[i].operands) {
      last[id] = std::max(last[id], i);
      ++readers[id];
    }
  }
  for (const auto &[name, id] : prog.inputs)
    first[id] = -1;
  for (const auto &[name, id] : prog.outputs)
    last[id] = nOps;

  std::vector<int> fuse(nOps, -1);
  for (int i = 0; i < nOps; ++i) {
    const Op &conv = prog.ops[i];
    if (!eligible[i] || conv.results.size() != 1)
      continue;
    const int c = conv.results[0];
    if (readers[c] != 1 || isGraphInputOrOutput(prog, c))
      continue;
    int j = i + 1;
    while (j < nOps && std::find(prog.ops[j].operands.begin(),
                                 prog.ops[j].operands.end(),
                                 c) == prog.ops[j].operands.end())
      ++j;
    if (j == nOps || prog.ops[j].kind != OpKind::Relu ||
        prog.ops[j].results.size() != 1)
      continue;
    const int r = prog.ops[j].results[0];
    const BufferInfo &rb = prog.buffers[r];
    if (rb.kind != BufferInfo::Kind::Arena ||
        prog.buffers[c].bytes != rb.bytes || prog.buffers[c].dtype != rb.dtype)
      continue;
    // Writing r at op i makes it live over [i, j] too: no buffer live then
    // may share its bytes.
    bool clash = false;
    for (size_t b = 0; b < nBuf && !clash; ++b) {
      const BufferInfo &o = prog.buffers[b];
      if (static_cast<int>(b) == r || static_cast<int>(b) == c ||
          o.kind != BufferInfo::Kind::Arena || o.bytes == 0)
        continue;
      const bool live = first[b] <= j && last[b] >= i;
      const bool overlap = o.offset < rb.offset + rb.bytes &&
                           rb.offset < o.offset + o.bytes;
      clash = live && overlap;
    }
    if (!clash)
      fuse[i] = j;
  }
  return fuse;
}

LayoutPlan planNhwcLayouts(const Program &prog,
                              const std::vector<int> &convDst,
                              const std::vector<bool> &writesNhwc,
                              const std::vector<bool> &skipped) {
  LayoutPlan plan;
  plan.nhwc.assign(prog.buffers.size(), false);
  plan.toPlain.resize(prog.ops.size());
  auto candidate = [&](int id) {
    const BufferInfo &b = prog.buffers[id];
    return b.kind == BufferInfo::Kind::Arena && b.dtype == DType::F32 &&
           b.shape.size() == 4 && !isGraphInputOrOutput(prog, id);
  };
  // Program order: every operand's layout is decided before its readers.
  for (size_t i = 0; i < prog.ops.size(); ++i) {
    if (skipped[i])
      continue;
    const Op &op = prog.ops[i];
    if (convDst[i] >= 0) {
      // A oneDNN conv reads either layout (it reorders what it must).
      plan.nhwc[convDst[i]] = writesNhwc[i] && candidate(convDst[i]);
      continue;
    }
    bool keep = isLayoutAgnostic(prog, op) && candidate(op.results[0]);
    for (int id : op.operands)
      keep = keep && plan.nhwc[id];
    if (keep) {
      plan.nhwc[op.results[0]] = true;
      continue;
    }
    for (size_t k = 0; k < op.operands.size(); ++k)
      if (plan.nhwc[op.operands[k]])
        plan.toPlain[i].push_back(static_cast<int>(k));
  }
  return plan;
}

} // namespace tessel::runtime::cpu
