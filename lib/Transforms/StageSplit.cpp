//===- StageSplit.cpp - pipeline stages as op attributes ------------------===//
//
// Between -tessel-add-loss and -tessel-microbatch: every forward op that
// computes from the function's arguments gets `tessel.stage = s`
// (docs/pipeline.md). Ops on weights and constants alone get none: each
// stage that needs them computes its own copy. Stages come from rules
// (`PATTERN=STAGE`, a glob over the op's ONNX node name; the first rule that
// matches wins, an op no rule names takes the largest stage of its operands)
// or, with auto, from the cost model: the ops in program order (a
// topological order of any DAG) cut into `stages` contiguous pieces whose
// largest cost is smallest, each op's predicted seconds on the cluster's
// device (tessel/OpTime, what --predict plays) or, without a cluster, its
// FLOPs. The loss is on the last stage.
//
//===----------------------------------------------------------------------===//

#include "tessel/Cost/ClusterFile.h"
#include "tessel/OpTime/OpTime.h"
#include "tessel/Plan/Plan.h"
#include "dialects/tessel/OpCost.h"
#include "tessel/Transforms/Passes.h"
#include "dialects/tessel/PipelineAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/GlobPattern.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_STAGESPLITPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

struct Rule {
  std::string pattern;
  llvm::GlobPattern glob;
  int64_t stage;
  bool used = false;
};

struct StageSplitPass : impl::StageSplitPassBase<StageSplitPass> {
  using Base::Base;

  SmallVector<Rule> parsedRules;

  void runOnOperation() override {
    if (stages < 1) {
      getOperation().emitError()
          << "-tessel-stage-split: stages must be at least 1, got "
          << int64_t(stages);
      return signalPassFailure();
    }
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal() && fn.isPublic() && failed(split(fn)))
        return signalPassFailure();
  }

  FailureOr<SmallVector<Rule>> parseRules(func::FuncOp fn) {
    SmallVector<Rule> out;
    for (const std::string &r : rules) {
      auto [pattern, stage] = StringRef(r).rsplit('=');
      int64_t s;
      if (pattern.empty() || stage.getAsInteger(10, s) || s < 0)
        return fn.emitOpError() << "stage rule '" << r
                                << "' is not PATTERN=STAGE with STAGE >= 0";
      if (s >= stages)
        return fn.emitOpError()
               << "stage rule '" << pattern << "' gives stage " << s
               << ", but the pipeline has " << int64_t(stages)
               << " stages (0.." << int64_t(stages) - 1 << ")";
      auto glob = llvm::GlobPattern::create(pattern);
      if (!glob)
        return fn.emitOpError() << "stage rule '" << pattern
                                << "': " << llvm::toString(glob.takeError());
      out.push_back({pattern.str(), std::move(*glob), s});
    }
    return out;
  }

  LogicalResult split(func::FuncOp fn) {
    if (!fn.getBody().hasOneBlock())
      return fn.emitOpError() << "has several blocks; stages split one block";
    Block &block = fn.getBody().front();
    // The ops that compute from an argument: the pipeline's work.
    llvm::DenseSet<Value> dependent(fn.getArguments().begin(),
                                    fn.getArguments().end());
    SmallVector<Operation *> ops;
    for (Operation &op : block.without_terminator())
      if (llvm::any_of(op.getOperands(),
                       [&](Value v) { return dependent.contains(v); })) {
        ops.push_back(&op);
        dependent.insert(op.result_begin(), op.result_end());
      }
    const int64_t n = stages;
    if (int64_t(ops.size()) < n)
      return fn.emitOpError()
             << n << " stages are more than the graph can be cut into: it "
             << "has " << ops.size() << " ops that compute from the inputs";

    DenseMap<Operation *, int64_t> stageOf;
    auto operandStage = [&](Operation *op) {
      int64_t s = 0;
      for (Value v : op->getOperands())
        if (Operation *d = v.getDefiningOp())
          if (auto it = stageOf.find(d); it != stageOf.end())
            s = std::max(s, it->second);
      return s;
    };
    if (autoSplit) {
      if (!rules.empty())
        return fn.emitOpError() << "stage rules and auto: give one of them";
      SmallVector<double> cost;
      if (cluster.empty()) {
        for (Operation *op : ops)
          cost.push_back(std::max(1.0, estimateFlops(op)));
      } else {
        std::optional<::tessel::cost::ClusterSpec> c =
            ::tessel::cost::getBuiltinCluster(cluster);
        if (!c) {
          auto loaded = ::tessel::cost::loadClusterFile(cluster);
          if (!loaded)
            return fn.emitOpError()
                   << "--stages auto: " << llvm::toString(loaded.takeError());
          c = std::move(*loaded);
        }
        for (Operation *op : ops)
          cost.push_back(getOpTime(op, c->device));
      }
      SmallVector<int64_t> piece = balance(cost, n);
      for (auto [op, s] : llvm::zip(ops, piece))
        stageOf[op] = s;
    } else {
      FailureOr<SmallVector<Rule>> parsed = parseRules(fn);
      if (failed(parsed))
        return failure();
      parsedRules = std::move(*parsed);
      for (Operation *op : ops) {
        std::string name = nodeName(op).str();
        int64_t from = operandStage(op), s = from;
        for (Rule &r : parsedRules)
          if (!name.empty() && r.glob.match(name)) {
            r.used = true;
            s = r.stage;
            break;
          }
        if (s < from)
          return op->emitOpError()
                 << "(ONNX node '" << name << "') is on stage " << s
                 << " but reads a value of stage " << from
                 << ": stages must follow the forward order";
        stageOf[op] = s;
      }
      for (Rule &r : parsedRules)
        if (!r.used)
          return fn.emitOpError() << "stage rule '" << r.pattern
                                  << "' matches no node (tesselc --list-nodes "
                                     "shows the names)";
    }
    // Ops that compute from the data alone, without any weight (the
    // labels' one-hot and mask for the loss), go where they are used: the
    // first stage that reads them, so that no stage sends what its
    // receiver can compute.
    llvm::DenseSet<Value> weighted;
    llvm::DenseSet<Operation *> anchored;
    for (Operation &op : block.without_terminator()) {
      bool fromWeight = isa<WeightOp>(op) ||
                        llvm::any_of(op.getOperands(), [&](Value v) {
                          return weighted.contains(v);
                        });
      if (!stageOf.count(&op)) {
        if (fromWeight)
          weighted.insert(op.result_begin(), op.result_end());
        continue;
      }
      std::string name = nodeName(&op).str();
      bool ruled = !autoSplit && !name.empty() &&
                   llvm::any_of(parsedRules, [&](const Rule &r) {
                     return r.glob.match(name);
                   });
      if (ruled || fromWeight ||
          llvm::any_of(op.getOperands(), [&](Value v) {
            Operation *d = v.getDefiningOp();
            return d && anchored.contains(d);
          }))
        anchored.insert(&op);
    }
    for (Operation *op : llvm::reverse(ops)) {
      if (anchored.contains(op))
        continue;
      int64_t first = -1;
      for (Operation *user : op->getUsers())
        if (auto it = stageOf.find(user); it != stageOf.end())
          first = first < 0 ? it->second : std::min(first, it->second);
      if (first >= 0)
        stageOf[op] = first;
    }
    SmallVector<int64_t> count(n, 0);
    for (auto &[op, s] : stageOf)
      ++count[s];
    for (int64_t s = 0; s < n; ++s)
      if (count[s] == 0)
        return fn.emitOpError() << "pipeline stage " << s << " of " << n
                                << " is empty: no op is assigned to it";
    auto ret = cast<func::ReturnOp>(block.getTerminator());
    if (!forwardOnly && ret.getNumOperands() > 0)
      if (Operation *loss = ret.getOperands().back().getDefiningOp())
        if (stageOf.lookup(loss) != n - 1)
          return fn.emitOpError()
                 << "the loss is computed on stage " << stageOf.lookup(loss)
                 << "; it must be on the last stage " << n - 1;
    Builder b(fn.getContext());
    for (auto &[op, s] : stageOf)
      op->setAttr(kStageAttr, b.getI64IntegerAttr(s));
    return success();
  }

  /// Cuts `cost` into `n` nonempty contiguous pieces minimising the largest
  /// piece: binary search on the bound, greedy fill. The stage of each item.
  static SmallVector<int64_t> balance(ArrayRef<double> cost, int64_t n) {
    double lo = 0, hi = 0;
    for (double c : cost) {
      lo = std::max(lo, c);
      hi += c;
    }
    // Greedy: a new piece whenever the bound would be passed; feasible
    // when it needs at most n pieces.
    auto cut = [&](double bound, SmallVector<int64_t> *out) {
      int64_t piece = 0;
      double sum = 0;
      for (double c : cost) {
        if (sum > 0 && sum + c > bound) {
          ++piece;
          sum = 0;
        }
        sum += c;
        if (out)
          out->push_back(std::min(piece, n - 1));
      }
      return piece < n;
    };
    for (int it = 0; it < 100; ++it) {
      double mid = (lo + hi) / 2;
      if (cut(mid, nullptr))
        hi = mid;
      else
        lo = mid;
    }
    SmallVector<int64_t> out;
    cut(hi, &out);
    // Every piece gets at least one item: shift trailing pieces left.
    int64_t size = out.size();
    for (int64_t i = size - 1, want = n - 1; i >= 0 && want >= 0; --i, --want)
      if (out[i] < want)
        out[i] = want;
      else
        break;
    return out;
  }
};

} // namespace
} // namespace mlir::tessel
