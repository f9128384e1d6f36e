//===- CollectiveAttrs.cpp - Validating collective instructions -----------===//
//
// The attribute contract the exporter writes (docs/runtime.md):
//   all_reduce         {kind, group}
//   all_gather         {dim, group}
//   reduce_scatter     {kind, dim, group}
//   all_to_all         {split_dim, concat_dim, group}
//   collective_permute {pairs: flat [src, dst, ...] indices within group,
//   group} broadcast          {root: index within group, group} send {peer:
//   global rank, tag}   one operand, no result recv               {peer: global
//   rank, tag}   no operand, one result
// `group` is the ordered list of global ranks taking part; this program's
// rank must be in it. Without `group` a collective involves this rank alone
// (the single-device form); the executor refuses that on a world of more
// than one rank.
//
//===----------------------------------------------------------------------===//
#include "CollectiveAttrs.h"
#include "tessel/runtime/CollectiveShapes.h"

#include "artifact.pb.h"

#include <algorithm>

namespace tessel::runtime {

namespace {

class Checker {
public:
  Checker(const artifact::Instruction &inst, const Program &p, Op &op)
      : inst(inst), p(p), op(op) {}

  Status check();

private:
  const artifact::Instruction &inst;
  const Program &p;
  Op &op;

  const artifact::Attribute *attr(const char *name) const {
    auto it = inst.attrs().find(name);
    return it == inst.attrs().end() ? nullptr : &it->second;
  }
  Status ints(const char *name, std::vector<int64_t> &v, bool required) const {
    const artifact::Attribute *a = attr(name);
    if (!a) {
      if (required)
        return Status::error("missing attribute '" + std::string(name) + "'");
      return Status::ok();
    }
    if (a->value_case() != artifact::Attribute::kInts)
      return Status::error("attribute '" + std::string(name) +
                           "' must be an int list");
    v.assign(a->ints().values().begin(), a->ints().values().end());
    return Status::ok();
  }
  Status intAttr(const char *name, int64_t &v) const {
    std::vector<int64_t> l;
    TSL_RETURN_IF_ERROR(ints(name, l, true));
    if (l.size() != 1)
      return Status::error("attribute '" + std::string(name) +
                           "' must hold one integer");
    v = l[0];
    return Status::ok();
  }
  Status dimAttr(const char *name, int64_t rank, int64_t &v) const {
    TSL_RETURN_IF_ERROR(intAttr(name, v));
    if (v < -rank || v >= rank)
      return Status::error("attribute '" + std::string(name) +
                           "' = " + std::to_string(v) +
                           " is out of range for rank " + std::to_string(rank));
    if (v < 0)
      v += rank;
    return Status::ok();
  }
  Status kindAttr() const {
    const artifact::Attribute *a = attr("kind");
    if (!a)
      return Status::error("missing attribute 'kind'");
    if (a->value_case() != artifact::Attribute::kStr)
      return Status::error("attribute 'kind' must be a string");
    auto k = parseReduceKind(a->str());
    if (!k)
      return Status::error("attribute 'kind' = '" + a->str() +
                           "' is not one of sum, max, min, mean, prod");
    op.coll.reduce = *k;
    return Status::ok();
  }
  Status counts(size_t operands, size_t results) const {
    if (op.operands.size() != operands || op.results.size() != results)
      return Status::error("expects " + std::to_string(operands) +
                           " operand(s) and " + std::to_string(results) +
                           " result(s), got " +
                           std::to_string(op.operands.size()) + " and " +
                           std::to_string(op.results.size()));
    return Status::ok();
  }
  Status groupAttr();
  Status peerAttrs();
  TensorView view(int id) const {
    const BufferInfo &b = p.buffers[id];
    return TensorView(static_cast<void *>(nullptr), b.dtype, b.shape);
  }
};

Status Checker::groupAttr() {
  CollectiveAttrs &c = op.coll;
  std::vector<int64_t> g;
  TSL_RETURN_IF_ERROR(ints("group", g, false));
  c.groupGiven = attr("group") != nullptr;
  if (!c.groupGiven) {
    c.group = {p.rank};
    c.index = 0;
    return Status::ok();
  }
  if (g.empty())
    return Status::error("attribute 'group' is empty");
  c.group.clear();
  c.index = -1;
  for (size_t i = 0; i < g.size(); ++i) {
    if (g[i] < 0 || g[i] >= (1 << 24))
      return Status::error("attribute 'group' holds rank " +
                           std::to_string(g[i]) + ", out of range");
    if (std::find(c.group.begin(), c.group.end(), g[i]) != c.group.end())
      return Status::error("attribute 'group' lists rank " +
                           std::to_string(g[i]) + " twice");
    if (g[i] == p.rank)
      c.index = static_cast<int>(i);
    c.group.push_back(static_cast<int>(g[i]));
  }
  if (c.index < 0)
    return Status::error("attribute 'group' does not include this program's "
                         "rank " +
                         std::to_string(p.rank));
  return Status::ok();
}

Status Checker::peerAttrs() {
  int64_t peer, tag;
  TSL_RETURN_IF_ERROR(intAttr("peer", peer));
  TSL_RETURN_IF_ERROR(intAttr("tag", tag));
  if (peer < 0 || peer >= (1 << 24) || peer == p.rank)
    return Status::error("attribute 'peer' = " + std::to_string(peer) +
                         " is not another rank (this program is rank " +
                         std::to_string(p.rank) + ")");
  if (tag < 0 || tag >= (int64_t(1) << 48))
    return Status::error("attribute 'tag' = " + std::to_string(tag) +
                         " is out of range [0, 2^48)");
  op.coll.peer = static_cast<int>(peer);
  op.coll.tag = tag;
  return Status::ok();
}

Status Checker::check() {
  CollectiveAttrs &c = op.coll;
  if (op.kind == OpKind::Send) {
    TSL_RETURN_IF_ERROR(counts(1, 0));
    return peerAttrs();
  }
  if (op.kind == OpKind::Recv) {
    TSL_RETURN_IF_ERROR(counts(0, 1));
    return peerAttrs();
  }
  TSL_RETURN_IF_ERROR(counts(1, 1));
  TSL_RETURN_IF_ERROR(groupAttr());
  int n = static_cast<int>(c.group.size());
  TensorView in = view(op.operands[0]), out = view(op.results[0]);
  int64_t rank = static_cast<int64_t>(in.shape.size());
  switch (op.kind) {
  case OpKind::AllReduce:
    TSL_RETURN_IF_ERROR(kindAttr());
    return checkAllReduceShapes(in, out, c.reduce);
  case OpKind::AllGather:
    TSL_RETURN_IF_ERROR(dimAttr("dim", rank, c.dim));
    return checkAllGatherShapes(in, out, c.dim, n, c.index);
  case OpKind::ReduceScatter:
    TSL_RETURN_IF_ERROR(kindAttr());
    TSL_RETURN_IF_ERROR(dimAttr("dim", rank, c.dim));
    return checkReduceScatterShapes(in, out, c.reduce, c.dim, n, c.index);
  case OpKind::AllToAll:
    TSL_RETURN_IF_ERROR(dimAttr("split_dim", rank, c.splitDim));
    TSL_RETURN_IF_ERROR(dimAttr("concat_dim", rank, c.concatDim));
    return checkAllToAllShapes(in, out, c.splitDim, c.concatDim, n, c.index);
  case OpKind::CollectivePermute: {
    std::vector<int64_t> flat;
    TSL_RETURN_IF_ERROR(ints("pairs", flat, true));
    if (flat.size() % 2)
      return Status::error("attribute 'pairs' must hold [src, dst] pairs, "
                           "got " +
                           std::to_string(flat.size()) + " integers");
    c.pairs.clear();
    for (size_t i = 0; i < flat.size(); i += 2) {
      if (flat[i] < 0 || flat[i] >= n || flat[i + 1] < 0 || flat[i + 1] >= n)
        return Status::error(
            "attribute 'pairs' holds (" + std::to_string(flat[i]) + ", " +
            std::to_string(flat[i + 1]) + "), out of range for a group of " +
            std::to_string(n));
      c.pairs.emplace_back(static_cast<int>(flat[i]),
                           static_cast<int>(flat[i + 1]));
    }
    TSL_RETURN_IF_ERROR(checkPermutePairs(c.pairs, n));
    return checkAllReduceShapes(in, out, ReduceKind::Max);
  }
  case OpKind::Broadcast: {
    int64_t root;
    TSL_RETURN_IF_ERROR(intAttr("root", root));
    if (root < 0 || root >= n)
      return Status::error("attribute 'root' = " + std::to_string(root) +
                           " is out of range for a group of " +
                           std::to_string(n));
    c.root = static_cast<int>(root);
    return checkAllReduceShapes(in, out, ReduceKind::Max);
  }
  default:
    return Status::error("not a collective");
  }
}

} // namespace

Status checkCollectiveInstruction(const artifact::Instruction &inst,
                                  const Program &p, Op &op) {
  return Checker(inst, p, op).check();
}

} // namespace tessel::runtime
