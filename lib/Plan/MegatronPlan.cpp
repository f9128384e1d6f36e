//===- MegatronPlan.cpp - the built-in plan `megatron` --------------------===//
//
// Megatron-LM's tensor parallelism found by graph structure, not by names:
// the seed's ColoTensor loop (split_param_col_tp1d / _row_tp1d over
// named_modules) without writing it. A matmul with a 2-D weight whose
// activation is computed only from other such matmuls' outputs, through ops
// that keep features apart (attention's head reshapes, transposes, score
// matmuls and softmax, an MLP's activation and gating, rotary slices), is the
// row-parallel half of a pair; those matmuls are the column-parallel half.
// A norm, a reduction, an embedding lookup or a graph input on the way means
// the activation is the residual stream: no pair. Fused or separate q/k/v,
// GELU or SwiGLU MLPs, biases or none all have this shape.
//
// Then, as examples/plans/gpt2_megatron.yaml: the token embedding (a 2-D
// table indexed by an integer graph input) and the lookups added to it
// split on the hidden dim when a layer norm takes their sum (one all_gather
// there; into an RMSNorm's pow and mean the residual stream would stay
// split, so Llama's stays replicated), and the LM head (the last projection
// whose output is the model's, over the vocab) split on the vocab.
//
// The plan it gives is ordinary rules naming the weights it chose, so
// applyPlan and the rest of the pipeline treat it as a written plan.
//
//===----------------------------------------------------------------------===//

#include "tessel/Plan/Plan.h"

#include "dialects/tessel/TesselOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// A matmul or gemm with a 2-D weight operand: the weight, which of its dims
/// is the output (column) dim, which the contracted (row) one.
struct Projection {
  Operation *op = nullptr;
  WeightOp weight;
  int64_t outDim = 1, inDim = 0;
};

std::optional<Projection> asProjection(Operation *op) {
  if (!op)
    return std::nullopt;
  // A 2-D weight, or its transpose (`transposed`): the exporter's graph
  // before constant folding (a shapes-only or meta-device export) reads
  // nn.Linear's [out, in] weight as x @ transpose(W).
  auto weightOf = [](Value v, bool *transposed = nullptr) -> WeightOp {
    if (transposed)
      *transposed = false;
    if (auto t = v.getDefiningOp<TransposeOp>();
        t && transposed && t.getPerm().size() == 2 && t.getPerm()[0] == 1) {
      v = t.getInput();
      *transposed = true;
    }
    auto w = v.getDefiningOp<WeightOp>();
    auto t = w ? dyn_cast<RankedTensorType>(w.getType()) : nullptr;
    return t && t.getRank() == 2 ? w : WeightOp();
  };
  if (auto mm = dyn_cast<MatmulOp>(op)) {
    // x @ W: W is [in, out]; x @ transpose(W): W is [out, in].
    bool transposed = false;
    if (WeightOp w = weightOf(mm->getOperand(1), &transposed);
        w && !weightOf(mm->getOperand(0)))
      return transposed ? Projection{op, w, 0, 1} : Projection{op, w, 1, 0};
    return std::nullopt;
  }
  if (auto g = dyn_cast<GemmOp>(op)) {
    if (g.getTransA())
      return std::nullopt;
    if (WeightOp w = weightOf(g.getB()); w && !weightOf(g.getA()))
      return g.getTransB() ? Projection{op, w, 0, 1} : Projection{op, w, 1, 0};
  }
  return std::nullopt;
}

/// The projections `v` is computed from, through ops that keep features
/// apart; nothing when something else (a norm, a reduction, a lookup, a
/// graph input) is on the way.
/// Whether `v` is computed from weights and constants alone (a mask or a
/// rotary table the exporter did not fold: its graph before constant
/// folding computes them with lookups and comparisons).
bool isConstantLike(Value v, llvm::DenseMap<Value, bool> &memo) {
  SmallVector<Value> stack{v};
  while (!stack.empty()) {
    Value x = stack.back();
    if (memo.count(x)) {
      stack.pop_back();
      continue;
    }
    Operation *def = x.getDefiningOp();
    if (!def || def->getNumRegions()) {
      memo[x] = false; // a graph input (or an op with regions)
      stack.pop_back();
      continue;
    }
    bool ready = true, constant = true;
    for (Value o : def->getOperands()) {
      auto it = memo.find(o);
      if (it == memo.end()) {
        stack.push_back(o);
        ready = false;
      } else {
        constant &= it->second;
      }
    }
    if (!ready)
      continue;
    memo[x] = constant;
    stack.pop_back();
  }
  return memo.lookup(v);
}

std::optional<SmallVector<Operation *>> sourcesOf(Value v) {
  SmallVector<Value> work{v};
  llvm::SmallPtrSet<Value, 32> seen;
  llvm::SetVector<Operation *> sources;
  llvm::DenseMap<Value, bool> constantLike;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (!seen.insert(x).second)
      continue;
    Operation *def = x.getDefiningOp();
    if (!def)
      return std::nullopt; // a graph input: the residual stream
    if (asProjection(def)) {
      sources.insert(def);
      continue;
    }
    if (isa<WeightOp, ConstantOp>(def) || isConstantLike(x, constantLike))
      continue; // masks, rotary tables, scales
    // Elementwise ops and data movement keep features apart; so do the
    // score matmuls and the softmax over keys of attention.
    if (!def->hasTrait<OpTrait::tessel::Elementwise>() &&
        !def->hasTrait<OpTrait::tessel::DataMovement>() &&
        !isa<SoftmaxOp, MatmulOp>(def))
      return std::nullopt; // a norm, a reduction, a lookup, ...
    for (Value o : def->getOperands())
      work.push_back(o);
    if (seen.size() > 4096)
      return std::nullopt;
  }
  if (sources.empty())
    return std::nullopt;
  return SmallVector<Operation *>(sources.begin(), sources.end());
}

/// The 1-D weight added to a column projection's output (its bias).
WeightOp biasOf(Operation *proj) {
  for (Operation *user : proj->getResult(0).getUsers())
    if (auto add = dyn_cast<AddOp>(user))
      for (Value o : add->getOperands())
        if (auto w = o.getDefiningOp<WeightOp>())
          if (cast<RankedTensorType>(w.getType()).getRank() == 1)
            return w;
  if (auto g = dyn_cast<GemmOp>(proj); g && g->getNumOperands() > 2)
    if (auto w = g->getOperand(2).getDefiningOp<WeightOp>())
      if (cast<RankedTensorType>(w.getType()).getRank() == 1)
        return w;
  return WeightOp();
}

/// A lookup (a gather on dim 0) in a 2-D weight: an embedding table.
WeightOp tableOf(GatherOp g) {
  auto w = g.getData().getDefiningOp<WeightOp>();
  if (!w || g.getAxis() != 0 ||
      cast<RankedTensorType>(w.getType()).getRank() != 2)
    return WeightOp();
  return w;
}

/// The embeddings: the token lookup (a table indexed by an integer graph
/// input) first, then the lookups added to it (positions, token types).
/// `sum` is their sum, the residual stream's start.
struct Embeddings {
  SmallVector<GatherOp> lookups;
  Value sum;
};

std::optional<Embeddings> embeddingsOf(ModuleOp module) {
  GatherOp token;
  module.walk([&](GatherOp g) {
    auto ids = dyn_cast<BlockArgument>(g.getIndices());
    if (!token && tableOf(g) && ids &&
        isa<IntegerType>(getElementTypeOrSelf(ids.getType())))
      token = g;
  });
  if (!token)
    return std::nullopt;
  int64_t hidden =
      cast<RankedTensorType>(tableOf(token).getType()).getDimSize(1);
  Embeddings e{{token}, token.getResult()};
  for (bool grew = true; grew;) {
    grew = false;
    for (Operation *user : e.sum.getUsers()) {
      auto add = dyn_cast<AddOp>(user);
      if (!add)
        continue;
      Value other = add->getOperand(add->getOperand(0) == e.sum ? 1 : 0);
      auto g = other.getDefiningOp<GatherOp>();
      if (!g || !tableOf(g) ||
          cast<RankedTensorType>(tableOf(g).getType()).getDimSize(1) != hidden)
        continue;
      e.lookups.push_back(g);
      e.sum = add.getResult();
      grew = true;
      break;
    }
  }
  return e;
}

/// Whether `v` enters a layer norm: the op, or the decomposed form that
/// -tessel-fuse-layer-norm folds into it (x - mean(x)). Propagation then
/// gathers a hidden-split `v` once, before the norm; into anything else (an
/// RMSNorm's pow and mean, say) the residual stream would stay split.
bool entersLayerNorm(Value v) {
  for (Operation *user : v.getUsers()) {
    if (isa<LayerNormOp>(user))
      return true;
    if (isa<ReduceMeanOp>(user))
      for (Operation *sub : user->getResult(0).getUsers())
        if (isa<SubOp>(sub) && sub->getOperand(0) == v)
          return true;
  }
  return false;
}

/// The LM head: the last projection whose output is the model's output
/// (through reshapes) and whose output dim is the vocab.
std::optional<Projection> lmHeadOf(ModuleOp module, int64_t vocab) {
  std::optional<Projection> head;
  module.walk([&](Operation *op) {
    std::optional<Projection> p = asProjection(op);
    if (!p ||
        cast<RankedTensorType>(p->weight.getType()).getDimSize(p->outDim) !=
            vocab)
      return;
    SmallVector<Value> work{op->getResult(0)};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      for (Operation *user : v.getUsers()) {
        if (isa<func::ReturnOp>(user)) {
          head = p;
          return;
        }
        if (isa<ReshapeOp, TransposeOp, CastOp>(user))
          work.push_back(user->getResult(0));
      }
    }
  });
  return head;
}


std::string nameOf(Operation *op) {
  if (auto n = dyn_cast<NameLoc>(op->getLoc()))
    return n.getName().str();
  std::string s;
  llvm::raw_string_ostream os(s);
  op->getLoc().print(os);
  return s;
}

} // namespace

Plan mlir::tessel::megatronPlan(ModuleOp module, raw_ostream &chosen) {
  Plan plan;
  llvm::DenseMap<Operation *, int> role; // 1 column, 2 row
  SmallVector<std::pair<SmallVector<Operation *>, Operation *>> pairs;
  module.walk([&](Operation *op) {
    std::optional<Projection> row = asProjection(op);
    if (!row)
      return;
    std::optional<SmallVector<Operation *>> cols =
        sourcesOf(op->getOperand(0));
    if (!cols)
      return;
    // A projection is one half only: a column one never also a row one.
    if (role.lookup(op) == 1 || llvm::any_of(*cols, [&](Operation *c) {
          return role.lookup(c) == 2;
        }))
      return;
    role[op] = 2;
    llvm::sort(*cols, [](Operation *a, Operation *b) {
      return a->getBlock() == b->getBlock() && a->isBeforeInBlock(b);
    });
    for (Operation *c : *cols)
      role[c] = 1;
    pairs.push_back({*cols, op});
  });

  llvm::StringSet<> named;
  auto addRule = [&](WeightOp w, int64_t dim, Operation *node) {
    if (!named.insert(w.getName()).second)
      return;
    PlanRule rule;
    rule.target = PlanRule::Target::Weight;
    rule.pattern = literalGlob(w.getName());
    PlanSplit split;
    split.dim = dim;
    split.axes = {"tp"};
    split.autoPad = true;
    rule.splits.push_back(split);
    rule.where = "built-in plan 'megatron' (" + nameOf(node) + ")";
    plan.rules.push_back(std::move(rule));
  };
  chosen << "megatron: " << pairs.size() << " column/row pair"
         << (pairs.size() == 1 ? "" : "s") << " over tp";
  chosen << (pairs.empty() ? " (no transformer block found: the weights "
                             "stay replicated)\n"
                           : "\n");
  for (auto &[cols, row] : pairs) {
    chosen << "  column:";
    for (auto [i, c] : llvm::enumerate(cols)) {
      Projection p = *asProjection(c);
      addRule(p.weight, p.outDim, c);
      chosen << (i ? ", " : " ") << nameOf(c) << " (" << p.weight.getName();
      if (WeightOp b = biasOf(c)) {
        addRule(b, 0, c);
        chosen << ", bias " << b.getName();
      }
      chosen << ")";
    }
    Projection r = *asProjection(row);
    addRule(r.weight, r.inDim, row);
    chosen << "\n  row:    " << nameOf(row) << " (" << r.weight.getName()
           << ")\n";
  }
  // The embeddings and the LM head, as gpt2_megatron.yaml splits them: the
  // tables' hidden dim (one all_gather where the residual stream starts),
  // the head's vocab (the logits gathered at the end).
  if (std::optional<Embeddings> e = embeddingsOf(module)) {
    bool split = entersLayerNorm(e->sum);
    chosen << "  embedding:";
    for (auto [i, g] : llvm::enumerate(e->lookups)) {
      if (split)
        addRule(tableOf(g), 1, g);
      chosen << (i ? ", " : " ") << nameOf(g) << " (" << tableOf(g).getName()
             << ")";
    }
    chosen << (split ? ": hidden dim split\n"
                     : ": replicated (no layer norm takes it, which would "
                       "gather it once: split, the residual stream would "
                       "stay split into every norm)\n");
    int64_t vocab =
        cast<RankedTensorType>(tableOf(e->lookups.front()).getType())
            .getDimSize(0);
    if (std::optional<Projection> head = lmHeadOf(module, vocab);
        head && !role.lookup(head->op)) {
      chosen << "  lm head:   " << nameOf(head->op) << " ("
             << head->weight.getName() << "): ";
      // A head tied to an embedding table follows the table's split.
      if (named.contains(head->weight.getName()))
        chosen << "tied to the embedding, split as it is\n";
      else
        chosen << "vocab split, the logits gathered\n";
      addRule(head->weight, head->outDim, head->op);
    }
  }
  // The batch over dp, as the built-in plan `dp`.
  plan.rules.push_back(batchOverDpRule("built-in plan 'megatron' (the batch)"));
  return plan;
}

llvm::Expected<Plan> mlir::tessel::loadPlan(StringRef spec, ModuleOp module,
                                      raw_ostream &chosen) {
  if (spec == "megatron")
    return megatronPlan(module, chosen);
  return loadPlan(spec);
}
