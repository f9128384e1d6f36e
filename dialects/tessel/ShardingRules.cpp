//===- ShardingRules.cpp - the sharding rule of every compute op ----------===//
//
// One builder per op family. A rule says, factor by factor, which operand and
// result dims correspond; see #tessel.rule and docs/sharding.md.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/ShardingRuleBuilder.h"
#include "dialects/tessel/TesselOps.h"

#include "llvm/ADT/STLExtras.h"
#include <numeric>

using namespace mlir;
using namespace mlir::tessel;

//===----------------------------------------------------------------------===//
// ShardingRuleBuilder
//===----------------------------------------------------------------------===//

ShardingRuleBuilder::ShardingRuleBuilder(MLIRContext *ctx,
                                         ArrayRef<int64_t> operandRanks,
                                         ArrayRef<int64_t> resultRanks)
    : ctx(ctx) {
  for (int64_t r : operandRanks)
    operands.emplace_back(r);
  for (int64_t r : resultRanks)
    results.emplace_back(r);
}

static SmallVector<int64_t> ranksOf(TypeRange types) {
  SmallVector<int64_t> ranks;
  for (Type t : types)
    ranks.push_back(cast<RankedTensorType>(t).getRank());
  return ranks;
}

ShardingRuleBuilder::ShardingRuleBuilder(Operation *op)
    : ShardingRuleBuilder(op->getContext(), ranksOf(op->getOperandTypes()),
                          ranksOf(op->getResultTypes())) {}

int64_t ShardingRuleBuilder::addFactor(int64_t size, ArrayRef<TensorDim> dims,
                                       FactorKind kind) {
  int64_t f = sizes.size();
  sizes.push_back(size);
  for (TensorDim d : dims)
    (d.isResult ? results : operands)[d.index][d.dim].push_back(f);
  if (kind == FactorKind::Reduction)
    reduction.push_back(f);
  else if (kind == FactorKind::NeedReplication)
    replication.push_back(f);
  return f;
}

OpShardingRuleAttr ShardingRuleBuilder::build() const {
  auto mappings = [&](ArrayRef<SmallVector<SmallVector<int64_t>>> tensors) {
    SmallVector<TensorMappingAttr> out;
    for (const auto &dims : tensors) {
      SmallVector<DimMappingAttr> dimAttrs;
      for (const auto &factors : dims)
        dimAttrs.push_back(DimMappingAttr::get(ctx, factors));
      out.push_back(TensorMappingAttr::get(ctx, dimAttrs));
    }
    return out;
  };
  return OpShardingRuleAttr::get(ctx, sizes, mappings(operands),
                                 mappings(results), reduction, replication);
}

//===----------------------------------------------------------------------===//
// Reshape factorisation
//===----------------------------------------------------------------------===//

ReshapeFactors mlir::tessel::factorReshape(ArrayRef<int64_t> in,
                                           ArrayRef<int64_t> out) {
  ReshapeFactors r;
  r.inDims.resize(in.size());
  r.outDims.resize(out.size());
  auto nonUnit = [](ArrayRef<int64_t> shape) {
    SmallVector<int64_t> dims;
    for (auto [i, d] : llvm::enumerate(shape))
      if (d != 1)
        dims.push_back(i);
    return dims;
  };
  SmallVector<int64_t> ins = nonUnit(in), outs = nonUnit(out);
  auto addFactor = [&](int64_t size, bool shardable) {
    r.sizes.push_back(size);
    r.shardable.push_back(shardable);
    return static_cast<int64_t>(r.sizes.size() - 1);
  };
  size_t i = 0, j = 0;
  while (i < ins.size() || j < outs.size()) {
    // The next group: the fewest dims on each side whose products agree.
    size_t gi = i, gj = j;
    int64_t pin = 1, pout = 1;
    do {
      if (gi < ins.size() && (pin <= pout || gj == outs.size()))
        pin *= in[ins[gi++]];
      else if (gj < outs.size())
        pout *= out[outs[gj++]];
      else
        break;
    } while (pin != pout);
    // Within the group, peel common major factors while one side's
    // remainder divides the other's.
    SmallVector<int64_t> groupFactors;
    SmallVector<std::pair<int64_t, bool>> assign; // (factor, onInSide)
    bool clean = pin == pout;
    size_t a = i, b = j;
    int64_t ra = a < gi ? in[ins[a]] : 1, rb = b < gj ? out[outs[b]] : 1;
    SmallVector<SmallVector<int64_t>> inF(gi - i), outF(gj - j);
    while (clean && a < gi && b < gj) {
      int64_t g = std::gcd(ra, rb);
      if (g != ra && g != rb) {
        clean = false;
        break;
      }
      inF[a - i].push_back(g);
      outF[b - j].push_back(g);
      ra /= g;
      rb /= g;
      if (ra == 1 && ++a < gi)
        ra = in[ins[a]];
      if (rb == 1 && ++b < gj)
        rb = out[outs[b]];
    }
    if (clean) {
      // Factors in order of appearance are shared by both sides.
      size_t ia = 0, ib = 0, pa = 0, pb = 0;
      while (ia < inF.size() && ib < outF.size()) {
        int64_t f = addFactor(inF[ia][pa], true);
        r.inDims[ins[i + ia]].push_back(f);
        r.outDims[outs[j + ib]].push_back(f);
        if (++pa == inF[ia].size())
          ++ia, pa = 0;
        if (++pb == outF[ib].size())
          ++ib, pb = 0;
      }
    } else {
      // No common split: each dim of the group is its own unshardable factor.
      for (size_t k = i; k < gi; ++k)
        r.inDims[ins[k]].push_back(addFactor(in[ins[k]], false));
      for (size_t k = j; k < gj; ++k)
        r.outDims[outs[k]].push_back(addFactor(out[outs[k]], false));
    }
    i = gi;
    j = gj;
  }
  return r;
}

//===----------------------------------------------------------------------===//
// Rules
//===----------------------------------------------------------------------===//

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

OpShardingRuleAttr mlir::tessel::buildSourceRule(Operation *op) {
  ShardingRuleBuilder b(op);
  for (auto [d, size] : llvm::enumerate(shapeOf(op->getResult(0))))
    b.addFactor(size, {resultDim(0, d)});
  return b.build();
}

// Every result dim is a factor; an operand dim right-aligned to it takes the
// factor unless it is a size-1 broadcast.
OpShardingRuleAttr mlir::tessel::buildElementwiseRule(Operation *op) {
  ShardingRuleBuilder b(op);
  ArrayRef<int64_t> out = shapeOf(op->getResult(0));
  int64_t rank = out.size();
  for (int64_t d = 0; d < rank; ++d) {
    SmallVector<TensorDim> dims;
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      ArrayRef<int64_t> s = shapeOf(v);
      int64_t od = d - (rank - static_cast<int64_t>(s.size()));
      if (od >= 0 && s[od] == out[d])
        dims.push_back(operandDim(i, od));
    }
    for (unsigned r = 0; r < op->getNumResults(); ++r)
      dims.push_back(resultDim(r, d));
    b.addFactor(out[d], dims);
  }
  return b.build();
}

OpShardingRuleAttr mlir::tessel::buildMatmulRule(MatmulOp op) {
  ShardingRuleBuilder b(op);
  ArrayRef<int64_t> lhs = shapeOf(op.getLhs()), rhs = shapeOf(op.getRhs()),
                    out = shapeOf(op.getResult());
  int64_t lr = lhs.size(), rr = rhs.size();
  int64_t batchRank = out.size() - (lr > 1) - (rr > 1);
  // Batch dims broadcast like an elementwise op.
  for (int64_t d = 0; d < batchRank; ++d) {
    SmallVector<TensorDim> dims{resultDim(0, d)};
    int64_t ld = d - (batchRank - (lr - 2)), rd = d - (batchRank - (rr - 2));
    if (lr > 2 && ld >= 0 && lhs[ld] == out[d])
      dims.push_back(operandDim(0, ld));
    if (rr > 2 && rd >= 0 && rhs[rd] == out[d])
      dims.push_back(operandDim(1, rd));
    b.addFactor(out[d], dims);
  }
  if (lr > 1)
    b.addFactor(lhs[lr - 2], {operandDim(0, lr - 2), resultDim(0, batchRank)});
  if (rr > 1)
    b.addFactor(rhs[rr - 1], {operandDim(1, rr - 1),
                              resultDim(0, out.size() - 1)});
  b.addFactor(lhs[lr - 1], {operandDim(0, lr - 1), operandDim(1, rr > 1 ? rr - 2 : 0)},
              FactorKind::Reduction);
  return b.build();
}

OpShardingRuleAttr mlir::tessel::buildGemmRule(GemmOp op) {
  ShardingRuleBuilder b(op);
  bool ta = op.getTransA(), tb = op.getTransB();
  ArrayRef<int64_t> out = shapeOf(op.getResult());
  SmallVector<TensorDim> m{operandDim(0, ta ? 1 : 0), resultDim(0, 0)};
  SmallVector<TensorDim> n{operandDim(1, tb ? 0 : 1), resultDim(0, 1)};
  if (Value c = op.getC()) {
    ArrayRef<int64_t> cs = shapeOf(c);
    int64_t off = 2 - cs.size();
    for (auto [j, size] : llvm::enumerate(cs))
      if (size == out[off + j])
        (off + static_cast<int64_t>(j) == 0 ? m : n)
            .push_back(operandDim(2, j));
  }
  b.addFactor(out[0], m);
  b.addFactor(out[1], n);
  b.addFactor(shapeOf(op.getA())[ta ? 0 : 1],
              {operandDim(0, ta ? 0 : 1), operandDim(1, tb ? 1 : 0)},
              FactorKind::Reduction);
  return b.build();
}

// Kept dims pass; reduced dims are reduction factors (their keep_dims
// result dim has size 1 and no factor).
OpShardingRuleAttr mlir::tessel::buildReduceRule(Operation *op) {
  ShardingRuleBuilder b(op);
  ArrayRef<int64_t> in = shapeOf(op->getOperand(0));
  auto reduced = cast<DenseI64ArrayAttr>(op->getAttr("dims")).asArrayRef();
  bool keep = op->hasAttr("keep_dims");
  int64_t r = 0;
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d) {
    if (llvm::is_contained(reduced, d)) {
      b.addFactor(in[d], {operandDim(0, d)}, FactorKind::Reduction);
      r += keep;
      continue;
    }
    b.addFactor(in[d], {operandDim(0, d), resultDim(0, r++)});
  }
  return b.build();
}

OpShardingRuleAttr mlir::tessel::buildAxisReplicatedRule(Operation *op) {
  ShardingRuleBuilder b(op);
  int64_t axis = cast<IntegerAttr>(op->getAttr("axis")).getInt();
  for (auto [d, size] : llvm::enumerate(shapeOf(op->getResult(0))))
    b.addFactor(size, {operandDim(0, d), resultDim(0, d)},
                static_cast<int64_t>(d) == axis ? FactorKind::NeedReplication
                                                : FactorKind::Pass);
  return b.build();
}

// layer_norm / rms_norm: the normalised dims [axis, rank) need replication
// and correspond to the dims of scale (and bias).
OpShardingRuleAttr mlir::tessel::buildNormRule(Operation *op) {
  ShardingRuleBuilder b(op);
  int64_t axis = cast<IntegerAttr>(op->getAttr("axis")).getInt();
  for (auto [d, size] : llvm::enumerate(shapeOf(op->getResult(0)))) {
    int64_t dd = d;
    SmallVector<TensorDim> dims{operandDim(0, dd), resultDim(0, dd)};
    if (dd < axis) {
      b.addFactor(size, dims);
      continue;
    }
    for (unsigned p = 1; p < op->getNumOperands(); ++p)
      dims.push_back(operandDim(p, dd - axis));
    b.addFactor(size, dims, FactorKind::NeedReplication);
  }
  return b.build();
}

// x[N, C, ...] normalised per channel by operands 1-4 (scale, bias, mean,
// variance: [C]): the channels tie them to the result's dim 1; the other
// dims of x and the result are `others`.
static OpShardingRuleAttr buildPerChannelRule(Operation *op,
                                              FactorKind others) {
  ShardingRuleBuilder b(op);
  for (auto [d, size] : llvm::enumerate(shapeOf(op->getResult(0)))) {
    SmallVector<TensorDim> dims{operandDim(0, d), resultDim(0, d)};
    if (d == 1)
      for (unsigned p = 1; p < 5; ++p)
        dims.push_back(operandDim(p, 0));
    b.addFactor(size, dims, d == 1 ? FactorKind::Pass : others);
  }
  return b.build();
}

// Inference: every dim passes.
OpShardingRuleAttr mlir::tessel::buildBatchNormRule(BatchNormOp op) {
  return buildPerChannelRule(op, FactorKind::Pass);
}

// The channels pass; every other dim stays replicated, since the batch
// statistics need all of it. -tessel-batch-norm-train lowers the op before
// propagation, into reductions that shard as SyncBN.
OpShardingRuleAttr mlir::tessel::buildBatchNormTrainRule(BatchNormTrainOp op) {
  return buildPerChannelRule(op, FactorKind::NeedReplication);
}

// data[:axis] ++ indices ++ data[axis+1:]; the gathered dim of data must be
// replicated (a vocab-parallel embedding is a partitioning choice, not a
// rule).
OpShardingRuleAttr mlir::tessel::buildGatherRule(GatherOp op) {
  ShardingRuleBuilder b(op);
  ArrayRef<int64_t> data = shapeOf(op.getData()), idx = shapeOf(op.getIndices());
  int64_t axis = op.getAxis(), ir = idx.size();
  for (int64_t d = 0; d < axis; ++d)
    b.addFactor(data[d], {operandDim(0, d), resultDim(0, d)});
  for (int64_t d = 0; d < ir; ++d)
    b.addFactor(idx[d], {operandDim(1, d), resultDim(0, axis + d)});
  for (int64_t d = axis + 1; d < static_cast<int64_t>(data.size()); ++d)
    b.addFactor(data[d], {operandDim(0, d), resultDim(0, d - 1 + ir)});
  b.addFactor(data[axis], {operandDim(0, axis)}, FactorKind::NeedReplication);
  return b.build();
}

// Every dim but `axis` pairs a result position with the data element at
// the same position, so indices, result and data share its factor where
// they have the same size; where the indices are shorter, the positions
// only match when all of data is there (both replicated). Along `axis` the
// indices pick data anywhere: data's axis is replicated, the indices' and
// the result's share a factor.
OpShardingRuleAttr
mlir::tessel::buildGatherElementsRule(GatherElementsOp op) {
  ShardingRuleBuilder b(op);
  ArrayRef<int64_t> data = shapeOf(op.getData()), idx = shapeOf(op.getIndices());
  int64_t axis = op.getAxis();
  for (int64_t d = 0; d < static_cast<int64_t>(idx.size()); ++d) {
    SmallVector<TensorDim> dims{operandDim(1, d), resultDim(0, d)};
    if (d != axis && idx[d] == data[d]) {
      dims.push_back(operandDim(0, d));
      b.addFactor(idx[d], dims);
      continue;
    }
    b.addFactor(data[d], {operandDim(0, d)}, FactorKind::NeedReplication);
    b.addFactor(idx[d], dims,
                d == axis ? FactorKind::Pass : FactorKind::NeedReplication);
  }
  return b.build();
}

OpShardingRuleAttr mlir::tessel::buildReshapeRule(ReshapeOp op) {
  ReshapeFactors r =
      factorReshape(shapeOf(op.getInput()), shapeOf(op.getResult()));
  ShardingRuleBuilder b(op);
  // Replay the factorisation factor by factor so that each dim lists its
  // factors major to minor.
  for (auto [f, size] : llvm::enumerate(r.sizes)) {
    SmallVector<TensorDim> dims;
    for (auto [d, fs] : llvm::enumerate(r.inDims))
      if (llvm::is_contained(fs, static_cast<int64_t>(f)))
        dims.push_back(operandDim(0, d));
    for (auto [d, fs] : llvm::enumerate(r.outDims))
      if (llvm::is_contained(fs, static_cast<int64_t>(f)))
        dims.push_back(resultDim(0, d));
    b.addFactor(size, dims,
                r.shardable[f] ? FactorKind::Pass : FactorKind::NeedReplication);
  }
  return b.build();
}

OpShardingRuleAttr mlir::tessel::buildTransposeRule(TransposeOp op) {
  ShardingRuleBuilder b(op);
  ArrayRef<int64_t> in = shapeOf(op.getInput());
  ArrayRef<int64_t> perm = op.getPerm();
  for (auto [d, size] : llvm::enumerate(in)) {
    int64_t r = llvm::find(perm, static_cast<int64_t>(d)) - perm.begin();
    b.addFactor(size, {operandDim(0, d), resultDim(0, r)});
  }
  return b.build();
}

// A dim whose size changes gets an operand-only and a result-only factor,
// both replicated.
static void addChangedDim(ShardingRuleBuilder &b, int64_t inSize,
                          ArrayRef<TensorDim> inDims, int64_t outSize,
                          ArrayRef<TensorDim> outDims) {
  for (TensorDim d : inDims)
    b.addFactor(inSize, {d}, FactorKind::NeedReplication);
  b.addFactor(outSize, outDims, FactorKind::NeedReplication);
}

OpShardingRuleAttr mlir::tessel::buildSliceRule(SliceOp op) {
  ShardingRuleBuilder b(op);
  ArrayRef<int64_t> in = shapeOf(op.getInput()), out = shapeOf(op.getResult());
  for (auto [d, size] : llvm::enumerate(in)) {
    if (in[d] == out[d])
      b.addFactor(size, {operandDim(0, d), resultDim(0, d)},
                  op.getStarts()[d] == 0 && op.getStrides()[d] == 1
                      ? FactorKind::Pass
                      : FactorKind::NeedReplication);
    else
      addChangedDim(b, in[d], {operandDim(0, d)}, out[d], {resultDim(0, d)});
  }
  return b.build();
}

// Concat and split: one tensor (the whole) is the concatenation of others
// (the pieces) along dim `cut`; the pieces are the operands (concat) or the
// results (split). Along `cut`, the whole and every piece get a replicated
// factor each, the operands' first; every other dim is one factor of all.
static OpShardingRuleAttr buildPiecewiseRule(Operation *op, int64_t cut,
                                             bool piecesAreOperands) {
  ShardingRuleBuilder b(op);
  ValueRange pieces = piecesAreOperands ? ValueRange(op->getOperands())
                                        : ValueRange(op->getResults());
  ArrayRef<int64_t> whole =
      shapeOf(piecesAreOperands ? op->getResult(0) : op->getOperand(0));
  auto wholeDim = [&](int64_t d) {
    return piecesAreOperands ? resultDim(0, d) : operandDim(0, d);
  };
  auto pieceDim = [&](unsigned k, int64_t d) {
    return piecesAreOperands ? operandDim(k, d) : resultDim(k, d);
  };
  for (int64_t d = 0; d < static_cast<int64_t>(whole.size()); ++d) {
    if (d == cut) {
      if (!piecesAreOperands)
        b.addFactor(whole[d], {wholeDim(d)}, FactorKind::NeedReplication);
      for (auto [k, v] : llvm::enumerate(pieces))
        b.addFactor(shapeOf(v)[d], {pieceDim(k, d)},
                    FactorKind::NeedReplication);
      if (piecesAreOperands)
        b.addFactor(whole[d], {wholeDim(d)}, FactorKind::NeedReplication);
      continue;
    }
    SmallVector<TensorDim> dims{wholeDim(d)};
    for (unsigned k = 0; k < pieces.size(); ++k)
      dims.push_back(pieceDim(k, d));
    b.addFactor(whole[d], dims);
  }
  return b.build();
}

OpShardingRuleAttr mlir::tessel::buildConcatRule(ConcatOp op) {
  return buildPiecewiseRule(op, op.getDim(), /*piecesAreOperands=*/true);
}

OpShardingRuleAttr mlir::tessel::buildSplitRule(SplitOp op) {
  return buildPiecewiseRule(op, op.getDim(), /*piecesAreOperands=*/false);
}

// The spatial dims of a conv-like op: operand 0's [.., H, W] windowed into
// the result's by operand 1's kernel [.., KH, KW]: all replicated.
static void addWindowDims(ShardingRuleBuilder &b, ArrayRef<int64_t> in,
                          ArrayRef<int64_t> out, ArrayRef<int64_t> kernel) {
  for (int64_t d = 2; d < 4; ++d)
    addChangedDim(b, in[d], {operandDim(0, d)}, out[d], {resultDim(0, d)});
  for (int64_t d = 2; d < 4; ++d)
    b.addFactor(kernel[d], {operandDim(1, d)}, FactorKind::NeedReplication);
}

// A channel dim of a conv-like op: its `dims` (each with its size) tie as
// one factor of `kind`; in a grouped op, whose channel groups do not line
// up across operands, each is a factor of its own, replicated.
static void addChannelDims(ShardingRuleBuilder &b, bool grouped,
                           ArrayRef<std::pair<int64_t, TensorDim>> dims,
                           FactorKind kind) {
  if (!grouped) {
    b.addFactor(dims[0].first, llvm::to_vector(llvm::make_second_range(dims)),
                kind);
    return;
  }
  for (auto [size, dim] : dims)
    b.addFactor(size, {dim}, FactorKind::NeedReplication);
}

OpShardingRuleAttr mlir::tessel::buildConvRule(Conv2DOp op) {
  ShardingRuleBuilder b(op);
  ArrayRef<int64_t> x = shapeOf(op.getInput()), w = shapeOf(op.getWeight()),
                    y = shapeOf(op.getResult());
  bool grouped = op.getGroup() != 1;
  b.addFactor(x[0], {operandDim(0, 0), resultDim(0, 0)});
  SmallVector<TensorDim> o{operandDim(1, 0), resultDim(0, 1)};
  if (op.getBias())
    o.push_back(operandDim(2, 0));
  b.addFactor(y[1], o, grouped ? FactorKind::NeedReplication : FactorKind::Pass);
  addChannelDims(b, grouped,
                 {{x[1], operandDim(0, 1)}, {w[1], operandDim(1, 1)}},
                 FactorKind::Reduction);
  addWindowDims(b, x, y, w);
  return b.build();
}

OpShardingRuleAttr mlir::tessel::buildPoolRule(Operation *op) {
  ShardingRuleBuilder b(op);
  ArrayRef<int64_t> x = shapeOf(op->getOperand(0)),
                    y = shapeOf(op->getResult(0));
  for (int64_t d = 0; d < 2; ++d)
    b.addFactor(x[d], {operandDim(0, d), resultDim(0, d)});
  for (int64_t d = 2; d < 4; ++d)
    addChangedDim(b, x[d], {operandDim(0, d)}, y[d], {resultDim(0, d)});
  return b.build();
}

// dx[N, C, H, W] from dy[N, O, OH, OW] and w[O, C/g, KH, KW]: the batch
// passes, O is summed over (dx partial where it is sharded), C passes to w.
OpShardingRuleAttr
mlir::tessel::buildConvBackwardDataRule(Conv2DBackwardDataOp op) {
  ShardingRuleBuilder b(op);
  ArrayRef<int64_t> dy = shapeOf(op.getGrad()), w = shapeOf(op.getWeight()),
                    dx = shapeOf(op.getResult());
  bool grouped = op.getGroup() != 1;
  b.addFactor(dy[0], {operandDim(0, 0), resultDim(0, 0)});
  addChannelDims(b, grouped,
                 {{dy[1], operandDim(0, 1)}, {w[0], operandDim(1, 0)}},
                 FactorKind::Reduction);
  addChannelDims(b, grouped,
                 {{w[1], operandDim(1, 1)}, {dx[1], resultDim(0, 1)}},
                 FactorKind::Pass);
  addWindowDims(b, dy, dx, w);
  return b.build();
}

// dw[O, C/g, KH, KW] from x[N, C, H, W] and dy[N, O, OH, OW]: the batch is
// summed over (dw partial over dp: DDP's gradient), O and C pass.
OpShardingRuleAttr
mlir::tessel::buildConvBackwardWeightRule(Conv2DBackwardWeightOp op) {
  ShardingRuleBuilder b(op);
  ArrayRef<int64_t> x = shapeOf(op.getInput()), dy = shapeOf(op.getGrad()),
                    dw = shapeOf(op.getResult());
  bool grouped = op.getGroup() != 1;
  b.addFactor(x[0], {operandDim(0, 0), operandDim(1, 0)}, FactorKind::Reduction);
  FactorKind kind = grouped ? FactorKind::NeedReplication : FactorKind::Pass;
  b.addFactor(dy[1], {operandDim(1, 1), resultDim(0, 0)}, kind);
  addChannelDims(b, grouped,
                 {{x[1], operandDim(0, 1)}, {dw[1], resultDim(0, 1)}},
                 FactorKind::Pass);
  for (int64_t d = 2; d < 4; ++d)
    b.addFactor(x[d], {operandDim(0, d)}, FactorKind::NeedReplication);
  for (int64_t d = 2; d < 4; ++d)
    b.addFactor(dy[d], {operandDim(1, d)}, FactorKind::NeedReplication);
  for (int64_t d = 2; d < 4; ++d)
    b.addFactor(dw[d], {resultDim(0, d)}, FactorKind::NeedReplication);
  return b.build();
}

// max_pool_backward (x, dy) and avg_pool_backward (dy): N and C pass through
// every operand and the result; the windows' dims stay replicated.
OpShardingRuleAttr mlir::tessel::buildPoolBackwardRule(Operation *op) {
  ShardingRuleBuilder b(op);
  ArrayRef<int64_t> dx = shapeOf(op->getResult(0));
  unsigned grad = op->getNumOperands() - 1;
  ArrayRef<int64_t> dy = shapeOf(op->getOperand(grad));
  for (int64_t d = 0; d < 2; ++d) {
    SmallVector<TensorDim> dims{resultDim(0, d)};
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      dims.push_back(operandDim(i, d));
    b.addFactor(dx[d], dims);
  }
  for (int64_t d = 2; d < 4; ++d) {
    SmallVector<TensorDim> whole{resultDim(0, d)};
    if (grad == 1)
      whole.push_back(operandDim(0, d));
    b.addFactor(dx[d], whole, FactorKind::NeedReplication);
    b.addFactor(dy[d], {operandDim(grad, d)}, FactorKind::NeedReplication);
  }
  return b.build();
}

OpShardingRuleAttr mlir::tessel::buildGlobalPoolRule(GlobalAvgPoolOp op) {
  ShardingRuleBuilder b(op);
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  for (int64_t d = 0; d < static_cast<int64_t>(x.size()); ++d) {
    if (d < 2)
      b.addFactor(x[d], {operandDim(0, d), resultDim(0, d)});
    else
      b.addFactor(x[d], {operandDim(0, d)}, FactorKind::Reduction);
  }
  return b.build();
}
