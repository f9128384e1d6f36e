//===- ConvPlan.cpp - Layouts and fusions around oneDNN kernels -----------===//
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

/// Live ranges of arena buffers in op indices, [first write, last read]
/// (graph inputs from the start, graph outputs to the end), and the
/// questions fusion asks of them.
class Liveness {
public:
  explicit Liveness(const Program &prog)
      : prog(prog), nOps(static_cast<int>(prog.ops.size())),
        first(prog.buffers.size(), nOps), last(prog.buffers.size(), -1),
        readers(prog.buffers.size(), 0) {
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
    // Weights, constants and states exist before the first instruction.
    for (size_t b = 0; b < prog.buffers.size(); ++b)
      if (prog.buffers[b].kind != BufferInfo::Kind::Arena)
        first[b] = -1;
  }

  int firstWrite(int id) const { return first[id]; }
  int lastRead(int id) const { return last[id]; }

  /// The only reader of buffer `id` (which must not be a graph output), or
  /// -1.
  int soleReader(int id, int after) const {
    // A state must be written where its instruction writes it: never fused
    // away.
    if (readers[id] != 1 || isGraphInputOrOutput(prog, id) ||
        prog.buffers[id].kind == BufferInfo::Kind::State)
      return -1;
    for (int j = after + 1; j < nOps; ++j)
      for (int o : prog.ops[j].operands)
        if (o == id)
          return j;
    return -1;
  }

  /// The only reader of op i's only result (`c`) when `eligible`, or -1:
  /// the op a fusion would fold into op i.
  int fusionCandidate(const std::vector<bool> &eligible, int i, int &c) const {
    const Op &op = prog.ops[i];
    if (!eligible[i] || op.results.size() != 1)
      return -1;
    c = op.results[0];
    return soleReader(c, i);
  }

  /// Whether buffer t may be written from op i on while ops up to j run:
  /// nothing else live over [i, j] (but `unused`) shares its bytes.
  bool writableEarly(int t, int i, int j, const std::vector<int> &unused) const {
    const BufferInfo &tb = prog.buffers[t];
    if (tb.kind != BufferInfo::Kind::Arena)
      return false;
    for (size_t b = 0; b < prog.buffers.size(); ++b) {
      const BufferInfo &o = prog.buffers[b];
      if (static_cast<int>(b) == t || o.kind != BufferInfo::Kind::Arena ||
          o.bytes == 0 ||
          std::find(unused.begin(), unused.end(), int(b)) != unused.end())
        continue;
      const bool live = first[b] <= j && last[b] >= i;
      const bool overlap = o.offset < tb.offset + tb.bytes &&
                           tb.offset < o.offset + o.bytes;
      if (live && overlap)
        return false;
    }
    return true;
  }

private:
  const Program &prog;
  int nOps;
  std::vector<int> first, last, readers;
};

} // namespace

std::vector<ConvFusion> planConvFusion(const Program &prog,
                                       const std::vector<bool> &eligible) {
  const int nOps = static_cast<int>(prog.ops.size());
  Liveness live(prog);
  auto sameShape = [&](int a, int b) {
    return prog.buffers[a].shape == prog.buffers[b].shape &&
           prog.buffers[a].dtype == prog.buffers[b].dtype;
  };

  std::vector<ConvFusion> plan(nOps);
  for (int i = 0; i < nOps; ++i) {
    const Op &conv = prog.ops[i];
    int c = -1;
    const int j = live.fusionCandidate(eligible, i, c);
    if (j < 0 || prog.ops[j].results.size() != 1)
      continue;
    const Op &next = prog.ops[j];
    ConvFusion f;
    int end = j;
    std::vector<int> unused = {c}; // never written once fused
    if (next.kind == OpKind::Relu && sameShape(c, next.results[0])) {
      f.relu = j;
      f.writes = next.results[0];
    } else if (next.kind == OpKind::Add && next.operands.size() == 2 &&
               sameShape(next.operands[0], next.operands[1]) &&
               sameShape(c, next.results[0])) {
      const int addend =
          next.operands[0] == c ? next.operands[1] : next.operands[0];
      // The addend must exist when the conv runs (and a state, which an
      // instruction between the two could change, is not read early).
      if (addend == c || live.firstWrite(addend) >= i ||
          prog.buffers[addend].kind == BufferInfo::Kind::State)
        continue;
      f.add = j;
      f.addend = addend;
      f.writes = next.results[0];
      const int k = live.soleReader(next.results[0], j);
      if (k >= 0 && prog.ops[k].kind == OpKind::Relu &&
          prog.ops[k].results.size() == 1 &&
          sameShape(next.results[0], prog.ops[k].results[0])) {
        f.relu = k;
        unused.push_back(f.writes);
        f.writes = prog.ops[k].results[0];
        end = k;
      }
    } else {
      continue;
    }
    if (f.addend >= 0) {
      // The arena planner often gives the add's result the addend's own
      // bytes (an in-place add): then the sum post-op adds the conv into
      // the addend where it lies, with no copy, if nothing else reads the
      // addend once the conv ran.
      const BufferInfo &ab = prog.buffers[f.addend], &tb = prog.buffers[f.writes];
      bool othersRead = false;
      for (int k = i + 1; k < end && !othersRead; ++k)
        if (k != f.add)
          for (int o : prog.ops[k].operands)
            othersRead = othersRead || o == f.addend;
      // Not when the conv reads the addend itself (`conv(x) + x`): it would
      // write the bytes it is reading.
      const bool convReadsIt =
          std::find(conv.operands.begin(), conv.operands.end(), f.addend) !=
          conv.operands.end();
      if (ab.kind == BufferInfo::Kind::Arena && ab.offset == tb.offset &&
          ab.bytes == tb.bytes && live.lastRead(f.addend) == f.add &&
          !othersRead && !convReadsIt) {
        f.inPlace = true;
        unused.push_back(f.addend);
      }
    }
    if (live.writableEarly(f.writes, i, end, unused))
      plan[i] = f;
  }
  return plan;
}

std::vector<MatMulEpilogue>
planMatMulEpilogue(const Program &prog, const std::vector<bool> &eligible) {
  const int nOps = static_cast<int>(prog.ops.size());
  Liveness live(prog);
  std::vector<MatMulEpilogue> plan(nOps);
  for (int i = 0; i < nOps; ++i) {
    int c = -1;
    // matmul -> add of a constant [N] bias -> gelu.
    const int j = live.fusionCandidate(eligible, i, c);
    if (j < 0 || prog.ops[j].kind != OpKind::Add ||
        prog.ops[j].operands.size() != 2 || prog.ops[j].results.size() != 1)
      continue;
    const BufferInfo &cb = prog.buffers[c];
    const Op &add = prog.ops[j];
    const int bias = add.operands[0] == c ? add.operands[1] : add.operands[0];
    const BufferInfo &bb = prog.buffers[bias];
    if (bias == c || !bb.isReadOnly() ||
        bb.dtype != DType::F32 || bb.shape != Shape{cb.shape.back()} ||
        prog.buffers[add.results[0]].shape != cb.shape)
      continue;
    const int k = live.soleReader(add.results[0], j);
    if (k < 0 || prog.ops[k].kind != OpKind::Gelu ||
        prog.ops[k].results.size() != 1 ||
        prog.buffers[prog.ops[k].results[0]].shape != cb.shape)
      continue;
    const int t = prog.ops[k].results[0];
    if (!live.writableEarly(t, i, k, {c, add.results[0]}))
      continue;
    plan[i] = {j, bias, k, prog.ops[k].tanhApproximation, t};
  }
  return plan;
}

LayoutPlan planLayouts(const Program &prog, const std::vector<int> &dnnlDst,
                       const std::vector<Layout> &writes,
                       const std::vector<int> &sameLayoutAs,
                       const std::vector<bool> &skipped) {
  LayoutPlan plan;
  plan.layout.assign(prog.buffers.size(), Layout::NCHW);
  plan.toPlain.resize(prog.ops.size());
  auto candidate = [&](int id, Layout l) {
    const BufferInfo &b = prog.buffers[id];
    if (l == Layout::NCHW)
      return true;
    return b.kind == BufferInfo::Kind::Arena && b.dtype == DType::F32 &&
           b.shape.size() == 4 && !isGraphInputOrOutput(prog, id) &&
           (l != Layout::NChw16c || b.shape[1] % 16 == 0);
  };
  // Program order: every operand's layout is decided before its readers.
  for (size_t i = 0; i < prog.ops.size(); ++i) {
    if (skipped[i])
      continue;
    const Op &op = prog.ops[i];
    if (dnnlDst[i] >= 0) {
      // oneDNN's kernels read any layout (they reorder what they must).
      const int t = dnnlDst[i];
      Layout l = sameLayoutAs[i] >= 0 ? plan.layout[sameLayoutAs[i]] : writes[i];
      plan.layout[t] = candidate(t, l) ? l : Layout::NCHW;
      continue;
    }
    if (op.operands.empty())
      continue;
    const Layout l = plan.layout[op.operands[0]];
    bool keep = l != Layout::NCHW && isLayoutAgnostic(prog, op) &&
                candidate(op.results[0], l);
    for (int id : op.operands)
      keep = keep && plan.layout[id] == l;
    if (keep) {
      plan.layout[op.results[0]] = l;
      continue;
    }
    for (size_t k = 0; k < op.operands.size(); ++k)
      if (plan.layout[op.operands[k]] != Layout::NCHW)
        plan.toPlain[i].push_back(static_cast<int>(k));
  }
  return plan;
}

} // namespace tessel::runtime::cpu
