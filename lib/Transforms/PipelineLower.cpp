//===- PipelineLower.cpp - one function per pipeline rank -----------------===//
//
// After partitioning: the training step, whose ops carry their stage,
// microbatch and phase (PipelineAttrs.h), becomes one function per
// coordinate of the mesh's `pp` axis, holding that rank's actions of a
// verified schedule in order (docs/pipeline.md). The ops of one microbatch
// are the one-rank program's ops, and each weight's gradient is summed in
// microbatch order in both, so the losses are bitwise those of the one-rank
// program with the same microbatches.
//
// Every op that computes from the step's data has a home: its own tags, or,
// for ops the later passes inserted untagged (collectives, reshards), the
// home of its latest operand. Ops on weights and constants alone are free:
// cloned on a rank where first needed. A value read on another stage than
// its home's is sent at the cut it crosses (forward values in SEND_F of
// every stage between, gradients in SEND_B), with its static type.
//
// A weight whose gradient has parts from several stages (a tied embedding
// and head) is kept by every rank that computes a part: after its last
// action each holder sends its parts to the others, receives theirs and
// runs the sum and the update, the same ops in the same order, on its own
// copy (Megatron's embedding group; docs/pipeline.md).
//
//===----------------------------------------------------------------------===//

#include "tessel/Schedule/Registry.h"
#include "tessel/Transforms/Passes.h"
#include "dialects/tessel/PipelineAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <map>
#include <set>

namespace mlir::tessel {
#define GEN_PASS_DEF_PIPELINELOWERPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

namespace pl = ::tessel::pipeline;
using pl::ActionKind;

enum class Phase { F, BW, W, STEP };

struct Home {
  int64_t stage = -1, mb = 0;
  Phase phase = Phase::F;
};

/// (kind, stage, microbatch) of a schedule action.
using ActionKey = std::tuple<int, int64_t, int64_t>;
ActionKey keyOf(ActionKind k, int64_t s, int64_t mb) {
  return {int(k), s, k == ActionKind::OptimizerStep ? -1 : mb};
}

std::string describe(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "'" << op->getName() << "'";
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    os << " (ONNX node '" << name.getName().getValue() << "')";
  return s;
}

StringRef phaseName(ActionKind k) {
  if (isSend(k))
    return "SEND";
  if (isRecv(k))
    return "RECV";
  return getActionKindName(k);
}

struct PipelineLowerPass : impl::PipelineLowerPassBase<PipelineLowerPass> {
  using Base::Base;

  func::FuncOp fn;
  MeshOp mesh;
  int64_t ppSize = 0, numStages = 0, numMicrobatches = 0;
  pl::Schedule sched;
  DenseMap<Operation *, Home> homes;
  // Values each message carries, in order: (F or B, sending stage, mb).
  std::map<std::tuple<int, int64_t, int64_t>, llvm::SetVector<Value>> messages;
  // The ops of each compute action, in program order.
  std::map<ActionKey, SmallVector<Operation *>> actionOps;
  SmallVector<AssignOp> freeAssigns;
  // The assigns that belong to a stage (parameter and state updates).
  SmallVector<AssignOp> assignsOf;
  int64_t tagWidth = 1;
  // A weight shared by stages (docs/pipeline.md): the ops that sum parts of
  // its gradient computed on different stages ...
  DenseSet<Operation *> combines;
  // ... and everything after them in the update, in program order; every
  // holder of the weight runs them after its last action.
  SmallVector<Operation *> sharedOps;
  DenseMap<Operation *, unsigned> sharedGroup;
  struct SharedGroup {
    // The parts the shared ops read, computed on one holder each.
    SmallVector<Value> parts;
    // The stages that compute a part or the shared ops.
    std::set<int64_t> stages;
    // Their ranks, ascending.
    SmallVector<int64_t> holders;
  };
  SmallVector<SharedGroup> groups;

  void runOnOperation() override {
    if (failed(run()))
      signalPassFailure();
  }

  LogicalResult run() {
    ModuleOp module = getOperation();
    for (auto f : module.getOps<func::FuncOp>())
      if (!f.isExternal() && f.isPublic()) {
        if (fn)
          return f.emitOpError() << "is a second public function; a "
                                    "pipeline lowers one training step";
        fn = f;
      }
    if (!fn)
      return module.emitError() << "-tessel-pipeline-lower: no function";
    auto meshes = llvm::to_vector(module.getOps<MeshOp>());
    if (meshes.size() != 1)
      return module.emitError()
             << "-tessel-pipeline-lower needs one mesh with a 'pp' axis";
    mesh = meshes[0];
    for (auto [name, size] :
         llvm::zip(mesh.getAxisNames(), mesh.getAxisSizes()))
      if (cast<StringAttr>(name).getValue() == kPipelineAxis)
        ppSize = size;
    if (ppSize < 1)
      return mesh.emitOpError() << "has no '" << kPipelineAxis
                                << "' axis to pipeline over";
    if (failed(computeHomes()) || failed(buildSchedule()) ||
        failed(computeMessages()) || failed(computeShared()) ||
        failed(assignActions()))
      return failure();
    OpBuilder b(fn);
    SmallVector<func::FuncOp> ranks;
    for (int64_t r = 0; r < ppSize; ++r) {
      FailureOr<func::FuncOp> f = buildRank(b, r);
      if (failed(f))
        return failure();
      ranks.push_back(*f);
    }
    fn.erase();
    return success();
  }

  // --- Homes -------------------------------------------------------------

  Phase parsePhase(StringRef p) {
    return p == "BW" ? Phase::BW : p == "W" ? Phase::W
                                 : p == "STEP" ? Phase::STEP
                                               : Phase::F;
  }

  LogicalResult computeHomes() {
    Block &block = fn.getBody().front();
    for (Operation &op : block.without_terminator()) {
      auto phase = op.getAttrOfType<StringAttr>(kPhaseAttr);
      // An inference step's ops have a stage and no phase: forward ops.
      if (phase || (forwardOnly && op.hasAttr(kStageAttr))) {
        Home h;
        h.stage = getPipelineInt(&op, kStageAttr);
        h.mb = std::max<int64_t>(0, getPipelineInt(&op, kMicrobatchAttr, 0));
        h.phase = phase ? parsePhase(phase.getValue()) : Phase::F;
        if (forwardOnly && h.phase != Phase::F)
          return op.emitOpError()
                 << describe(&op) << " is of phase " << phase
                 << " in a forward-only pipeline";
        if (h.stage < 0)
          return op.emitOpError() << describe(&op)
                                  << " has a pipeline phase but no stage; "
                                     "run -tessel-stage-split first";
        homes[&op] = h;
        numStages = std::max(numStages, h.stage + 1);
        numMicrobatches = std::max(numMicrobatches, h.mb + 1);
        continue;
      }
      // Untagged: the home of its latest operand, or free.
      std::optional<Home> latest;
      for (Value v : op.getOperands()) {
        Operation *d = v.getDefiningOp();
        auto it = d ? homes.find(d) : homes.end();
        if (it == homes.end())
          continue;
        const Home &h = it->second;
        if (latest && latest->stage != h.stage)
          return op.emitOpError()
                 << describe(&op) << " reads values of pipeline stages "
                 << latest->stage << " and " << h.stage;
        if (!latest || later(h, *latest))
          latest = h;
      }
      if (latest)
        homes[&op] = *latest;
      else if (auto a = dyn_cast<AssignOp>(op))
        freeAssigns.push_back(a);
    }
    for (Operation &op : block.without_terminator()) {
      if (auto a = dyn_cast<AssignOp>(op); a && homes.count(a))
        assignsOf.push_back(a);
    }
    if (numStages == 0)
      return fn.emitOpError() << "has no pipeline stages; run "
                                 "-tessel-stage-split first";
    return success();
  }

  /// Order of homes within one stage, before the schedule is known: by
  /// microbatch, the forward before the backward; W and STEP last.
  static bool later(const Home &a, const Home &b) {
    auto rank = [](const Home &h) {
      switch (h.phase) {
      case Phase::F:
        return std::make_tuple(0, h.mb);
      case Phase::BW:
        return std::make_tuple(1, h.mb);
      case Phase::W:
        return std::make_tuple(2, h.mb);
      case Phase::STEP:
        return std::make_tuple(3, int64_t(0));
      }
      return std::make_tuple(0, int64_t(0));
    };
    return rank(a) > rank(b);
  }

  // --- Schedule ----------------------------------------------------------

  LogicalResult buildSchedule() {
    if (numStages != ppSize * chunks)
      return fn.emitOpError()
             << "has " << numStages << " pipeline stages, but pp=" << ppSize
             << " with " << int64_t(chunks) << " chunk(s) per rank needs "
             << ppSize * chunks;
    llvm::Expected<pl::Schedule> s = [&]() -> llvm::Expected<pl::Schedule> {
      if (!scheduleFile.empty())
        return pl::loadSchedule(scheduleFile);
      pl::ScheduleOptions o;
      o.ranks = ppSize;
      o.microbatches = numMicrobatches;
      o.chunks = chunks;
      return pl::ScheduleRegistry::getGlobal().build(schedule, o);
    }();
    if (!s)
      return fn.emitOpError() << llvm::toString(s.takeError());
    if (s->getNumRanks() != ppSize || s->getNumStages() != numStages ||
        s->getNumMicrobatches() != numMicrobatches)
      return fn.emitOpError()
             << "schedule '" << s->getName() << "' has " << s->getNumRanks()
             << " ranks, " << s->getNumStages() << " stages and "
             << s->getNumMicrobatches() << " microbatches; the program "
             << ppSize << " ranks, " << numStages << " stages and "
             << numMicrobatches << " microbatches";
    // Each weight's gradient accumulates in microbatch order (the one-rank
    // program's, PyTorch's): a stage's weight-gradient work must follow it.
    for (int64_t r = 0; r < s->getNumRanks(); ++r) {
      std::map<int64_t, int64_t> next;
      for (const pl::Action &a : s->getActions(r)) {
        if (a.kind != ActionKind::BackwardWeight &&
            a.kind != ActionKind::FullBackward)
          continue;
        int64_t &want = next[a.stage];
        if (a.microbatch != want)
          return fn.emitOpError()
                 << "schedule '" << s->getName() << "' runs the weight "
                 << "gradient of stage " << a.stage << " for microbatch "
                 << a.microbatch << " where microbatch " << want
                 << " is next: gradients accumulate in microbatch order "
                    "(as in the one-rank program), so each stage's W and BW "
                    "actions must run in microbatch order";
        ++want;
      }
    }
    sched = std::move(*s);
    return success();
  }

  // --- Messages ----------------------------------------------------------

  LogicalResult computeMessages() {
    Block &block = fn.getBody().front();
    for (Operation &op : block) {
      auto uit = homes.find(&op);
      const bool isRet = isa<func::ReturnOp>(op);
      if (uit == homes.end() && !isRet)
        continue;
      int64_t su = isRet ? numStages - 1 : uit->second.stage;
      for (Value v : op.getOperands()) {
        Operation *d = v.getDefiningOp();
        auto it = d ? homes.find(d) : homes.end();
        if (it == homes.end() || it->second.stage == su)
          continue;
        const Home &h = it->second;
        // A sum of parts of a weight's gradient from two stages: the
        // holders exchange their parts (computeShared).
        if (!isRet && h.phase == Phase::W &&
            (uit->second.phase == Phase::W ||
             uit->second.phase == Phase::STEP)) {
          combines.insert(&op);
          continue;
        }
        if (su > h.stage) {
          if (h.phase != Phase::F)
            return op.emitOpError()
                   << describe(&op) << " on stage " << su
                   << " reads a backward value of stage " << h.stage;
          for (int64_t t = h.stage; t < su; ++t)
            messages[{0, t, h.mb}].insert(v);
        } else {
          if (h.phase == Phase::F)
            return op.emitOpError()
                   << describe(&op) << " on stage " << su
                   << " reads a forward value of the later stage " << h.stage;
          if (h.phase != Phase::BW)
            return op.emitOpError()
                   << describe(&op) << " on stage " << su
                   << " reads a weight gradient of stage " << h.stage;
          for (int64_t t = h.stage; t > su; --t)
            messages[{1, t, h.mb}].insert(v);
        }
      }
    }
    for (auto &[key, values] : messages)
      tagWidth = std::max<int64_t>(tagWidth, values.size());
    return success();
  }

  // --- Weights shared by stages ------------------------------------------

  /// The shared updates: each combine and the W and STEP ops that compute
  /// from it, grouped by the values they pass on to each other; each
  /// group's parts (the values of other ops they read, each computed on one
  /// stage) and holders (the ranks of those stages).
  LogicalResult computeShared() {
    if (combines.empty())
      return success();
    llvm::EquivalenceClasses<Operation *> classes;
    DenseSet<Operation *> shared;
    for (Operation &op : fn.getBody().front().without_terminator()) {
      auto it = homes.find(&op);
      if (it == homes.end())
        continue;
      SmallVector<Operation *> from;
      for (Value v : op.getOperands())
        if (Operation *d = v.getDefiningOp(); d && shared.contains(d))
          from.push_back(d);
      if (!combines.contains(&op) && from.empty())
        continue;
      if (it->second.phase != Phase::W && it->second.phase != Phase::STEP)
        return op.emitOpError()
               << describe(&op) << " of stage " << it->second.stage
               << " reads the sum of a weight's gradient over stages, which "
                  "only the update of that weight may read";
      shared.insert(&op);
      sharedOps.push_back(&op);
      classes.insert(&op);
      for (Operation *d : from)
        classes.unionSets(d, &op);
    }
    // A part read by two groups joins them.
    DenseMap<Value, Operation *> partReader;
    for (Operation *op : sharedOps)
      for (Value v : op->getOperands())
        if (Operation *d = v.getDefiningOp();
            d && homes.count(d) && !shared.contains(d)) {
          auto [it, fresh] = partReader.try_emplace(v, op);
          if (!fresh)
            classes.unionSets(it->second, op);
        }
    DenseMap<Operation *, unsigned> groupOfLeader;
    for (Operation *op : sharedOps) {
      Operation *leader = classes.getLeaderValue(op);
      auto [it, fresh] = groupOfLeader.try_emplace(leader, groups.size());
      if (fresh)
        groups.emplace_back();
      sharedGroup[op] = it->second;
      SharedGroup &g = groups[it->second];
      g.stages.insert(homes.lookup(op).stage);
      for (Value v : op->getOperands())
        if (Operation *d = v.getDefiningOp();
            d && homes.count(d) && !shared.contains(d) &&
            !llvm::is_contained(g.parts, v)) {
          g.parts.push_back(v);
          g.stages.insert(homes.lookup(d).stage);
        }
    }
    for (SharedGroup &g : groups) {
      std::set<int64_t> ranks;
      for (int64_t s : g.stages)
        ranks.insert(sched.getRank(s));
      g.holders.assign(ranks.begin(), ranks.end());
    }
    return success();
  }

  /// Rank r's part of the shared updates, after its last action: the
  /// exchange of the parts, then the shared ops of every group it holds.
  /// Messages go in one order on every rank (part by part in program
  /// order, receivers ascending), so blocking p2p cannot deadlock.
  LogicalResult buildShared(OpBuilder &b, int64_t r, IRMapping &map,
                            llvm::function_ref<bool(Value)> ensure) {
    auto meshRef = FlatSymbolRefAttr::get(fn.getContext(), mesh.getSymName());
    auto axes = b.getStrArrayAttr({kPipelineAxis});
    // Tags after every tag of the schedule's messages.
    int64_t tag = 2 * numMicrobatches * numStages * tagWidth;
    auto localStage = [&](const SharedGroup &g) {
      for (int64_t s : g.stages)
        if (sched.getRank(s) == r)
          return s;
      return int64_t(-1);
    };
    auto tagShared = [&](Operation *op, StringRef phase, int64_t stage) {
      op->setAttr(kPhaseAttr, b.getStringAttr(phase));
      op->setAttr(kStageAttr, b.getI64IntegerAttr(stage));
      op->setAttr(kMicrobatchAttr, b.getI64IntegerAttr(-1));
    };
    for (const SharedGroup &g : groups) {
      const bool holds = llvm::is_contained(g.holders, r);
      for (Value part : g.parts) {
        const int64_t owner =
            sched.getRank(homes.lookup(part.getDefiningOp()).stage);
        const int64_t partTag = tag++;
        if (!holds)
          continue;
        if (owner == r) {
          if (!ensure(part))
            return fn.emitOpError()
                   << "pp rank " << r << " must send its part of a shared "
                   << "weight's gradient, " << describe(part.getDefiningOp())
                   << ", before it has it";
          for (int64_t h : g.holders)
            if (h != r)
              tagShared(SendOp::create(b, part.getLoc(), map.lookup(part),
                                       meshRef, axes, b.getI64IntegerAttr(h),
                                       b.getI64IntegerAttr(partTag)),
                        "SEND", localStage(g));
          continue;
        }
        auto recv = RecvOp::create(b, part.getLoc(), part.getType(), meshRef,
                                   axes, b.getI64IntegerAttr(owner),
                                   b.getI64IntegerAttr(partTag));
        map.map(part, recv.getResult());
        tagShared(recv, "RECV", localStage(g));
      }
    }
    for (Operation *op : sharedOps) {
      const SharedGroup &g = groups[sharedGroup.lookup(op)];
      if (!llvm::is_contained(g.holders, r))
        continue;
      for (Value v : op->getOperands())
        if (!ensure(v))
          return op->emitOpError()
                 << describe(op) << " of a shared weight's update reads "
                 << describe(v.getDefiningOp()) << ", which pp rank " << r
                 << " does not have";
      tagShared(b.clone(*op, map), "STEP", localStage(g));
    }
    return success();
  }

  // --- Actions -----------------------------------------------------------

  /// Whether the schedule splits (stage, mb)'s backward into B and W.
  bool splitsBackward(int64_t s, int64_t mb) {
    for (const pl::Action &a : sched.getActions(sched.getRank(s)))
      if (a.stage == s && a.microbatch == mb)
        if (a.kind == ActionKind::BackwardInput)
          return true;
    return false;
  }

  LogicalResult assignActions() {
    // B of a split backward: what the gradient sent to the previous stage
    // needs, within that backward.
    DenseSet<Operation *> inputGrad;
    for (auto &[key, values] : messages) {
      auto [dir, s, mb] = key;
      if (dir != 1 || !splitsBackward(s, mb))
        continue;
      SmallVector<Operation *> work;
      for (Value v : values)
        if (Operation *d = v.getDefiningOp())
          work.push_back(d);
      while (!work.empty()) {
        Operation *op = work.pop_back_val();
        auto it = homes.find(op);
        if (it == homes.end() || it->second.stage != s ||
            it->second.mb != mb || it->second.phase != Phase::BW ||
            !inputGrad.insert(op).second)
          continue;
        for (Value o : op->getOperands())
          if (Operation *d = o.getDefiningOp())
            work.push_back(d);
      }
    }
    // Which actions exist.
    std::set<ActionKey> scheduled;
    for (int64_t r = 0; r < ppSize; ++r)
      for (const pl::Action &a : sched.getActions(r))
        scheduled.insert(keyOf(a.kind, a.stage, a.microbatch));
    for (Operation &op : fn.getBody().front().without_terminator()) {
      auto it = homes.find(&op);
      if (it == homes.end() || sharedGroup.count(&op))
        continue;
      const Home &h = it->second;
      ActionKind k = ActionKind::Forward;
      switch (h.phase) {
      case Phase::F:
        k = ActionKind::Forward;
        break;
      case Phase::BW:
        k = !splitsBackward(h.stage, h.mb) ? ActionKind::FullBackward
            : inputGrad.contains(&op)      ? ActionKind::BackwardInput
                                           : ActionKind::BackwardWeight;
        break;
      case Phase::W:
        k = splitsBackward(h.stage, h.mb) ? ActionKind::BackwardWeight
                                          : ActionKind::FullBackward;
        break;
      case Phase::STEP:
        k = ActionKind::OptimizerStep;
        break;
      }
      ActionKey key = keyOf(k, h.stage, h.mb);
      if (!scheduled.count(key))
        return op.emitOpError()
               << describe(&op) << " belongs to stage " << h.stage
               << ", microbatch " << h.mb << ", which schedule '"
               << sched.getName() << "' does not run";
      actionOps[key].push_back(&op);
    }
    return success();
  }

  // --- One rank ----------------------------------------------------------

  FailureOr<func::FuncOp> buildRank(OpBuilder &top, int64_t r) {
    MLIRContext *ctx = fn.getContext();
    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
    const bool hasLoss = sched.getRank(numStages - 1) == r;
    SmallVector<Type> results;
    // Inference: every rank returns the outputs (the last stage's rank
    // sends them), as a program without pipeline stages does.
    if (hasLoss || forwardOnly)
      results.assign(ret.getOperandTypes().begin(),
                     ret.getOperandTypes().end());
    auto f = func::FuncOp::create(
        top, fn.getLoc(), (fn.getSymName() + "_pp" + Twine(r)).str(),
        FunctionType::get(ctx, fn.getArgumentTypes(), results));
    for (NamedAttribute a : fn->getDiscardableAttrs())
      f->setAttr(a.getName(), a.getValue());
    if (!hasLoss && !forwardOnly) {
      for (StringRef k : {TesselDialect::kOutputNamesAttrName.data(),
                          TesselDialect::kGlobalResultShardingsAttrName.data()})
        if (f->hasAttr(k))
          f->setAttr(k, ArrayAttr::get(ctx, {}));
    }
    f->setAttr(kPpRankAttr, IntegerAttr::get(IntegerType::get(ctx, 64), r));
    auto i64 = [&](int64_t v) {
      return IntegerAttr::get(IntegerType::get(ctx, 64), v);
    };
    f->setAttr(kPpScheduleAttr,
               DictionaryAttr::get(
                   ctx, {NamedAttribute(StringAttr::get(ctx, "name"),
                                        StringAttr::get(ctx, sched.getName())),
                         NamedAttribute(StringAttr::get(ctx, "chunks"),
                                        i64(chunks)),
                         NamedAttribute(StringAttr::get(ctx, "microbatches"),
                                        i64(numMicrobatches)),
                         NamedAttribute(StringAttr::get(ctx, "tag_width"),
                                        i64(tagWidth))}));
    Block *body = f.addEntryBlock();
    OpBuilder b = OpBuilder::atBlockBegin(body);
    IRMapping map;
    for (auto [from, to] : llvm::zip(fn.getArguments(), f.getArguments())) {
      map.map(from, to);
      to.setLoc(from.getLoc()); // the input names (not the function's)
    }

    // Free values: cloned where first needed.
    std::function<bool(Value)> ensure = [&](Value v) -> bool {
      if (map.contains(v))
        return true;
      Operation *d = v.getDefiningOp();
      if (!d || homes.count(d))
        return false;
      for (Value o : d->getOperands())
        if (!ensure(o))
          return false;
      b.clone(*d, map);
      return true;
    };
    auto tagClone = [&](Operation *op, StringRef phase, int64_t s,
                        int64_t mb) {
      op->setAttr(kPhaseAttr, b.getStringAttr(phase));
      op->setAttr(kStageAttr, b.getI64IntegerAttr(s));
      op->setAttr(kMicrobatchAttr, b.getI64IntegerAttr(mb));
    };
    auto meshRef = FlatSymbolRefAttr::get(ctx, mesh.getSymName());
    auto axes = b.getStrArrayAttr({kPipelineAxis});
    for (const pl::Action &a : sched.getActions(r)) {
      if (pl::isCompute(a.kind)) {
        auto it = actionOps.find(keyOf(a.kind, a.stage, a.microbatch));
        if (it == actionOps.end())
          continue;
        for (Operation *op : it->second) {
          for (Value v : op->getOperands())
            if (!ensure(v)) {
              Operation *d = v.getDefiningOp();
              return op->emitOpError()
                     << describe(op) << " of stage " << a.stage
                     << ", microbatch " << a.microbatch << " reads "
                     << (d ? describe(d) : std::string("an argument"))
                     << ", which pp rank " << r
                     << " does not have at that point of schedule '"
                     << sched.getName() << "'";
            }
          Operation *c = b.clone(*op, map);
          tagClone(c, phaseName(a.kind), a.stage,
                   a.kind == ActionKind::OptimizerStep ? -1 : a.microbatch);
        }
        continue;
      }
      // Which message: (direction, sending stage, mb).
      const bool forward = a.kind == ActionKind::SendForward ||
                           a.kind == ActionKind::RecvForward;
      int64_t sender = pl::isSend(a.kind) ? a.stage
                       : forward          ? a.stage - 1
                                          : a.stage + 1;
      auto it = messages.find({forward ? 0 : 1, sender, a.microbatch});
      if (it == messages.end())
        continue;
      int64_t peer = sched.getPeerRank(a);
      int64_t base = sched.getMessageTag(a) * tagWidth;
      for (auto [i, v] : llvm::enumerate(it->second)) {
        Operation *c;
        if (pl::isSend(a.kind)) {
          if (!ensure(v))
            return fn.emitOpError()
                   << "pp rank " << r << " must send a value of "
                   << describe(v.getDefiningOp()) << " at " << phaseName(a.kind)
                   << " of stage " << a.stage << ", microbatch "
                   << a.microbatch << ", before it has it";
          c = SendOp::create(b, v.getLoc(), map.lookup(v), meshRef, axes,
                             b.getI64IntegerAttr(peer),
                             b.getI64IntegerAttr(base + int64_t(i)));
        } else {
          auto recv = RecvOp::create(b, v.getLoc(), v.getType(), meshRef, axes,
                                     b.getI64IntegerAttr(peer),
                                     b.getI64IntegerAttr(base + int64_t(i)));
          map.map(v, recv.getResult());
          c = recv;
        }
        tagClone(c, phaseName(a.kind), a.stage, a.microbatch);
      }
    }
    if (failed(buildShared(b, r, map, ensure)))
      return failure();
    // State every rank keeps (the optimizer's step count), where it is read.
    for (AssignOp a : freeAssigns)
      if (map.contains(a.getWeight()) && ensure(a.getValue()))
        b.clone(*a, map);
    // A weight this rank reads must be updated here too, or its copy would
    // go stale after the first step: only the ranks that compute part of a
    // weight's gradient hold a copy of it.
    for (AssignOp a : assignsOf) {
      if (!map.contains(a.getWeight()) || map.contains(a.getResult()))
        continue;
      auto w = a.getWeight().getDefiningOp<WeightOp>();
      auto h = homes.find(a);
      return fn.emitOpError()
             << "weight '" << (w ? w.getName() : StringRef("?"))
             << "' is read on pp rank " << r << " but updated on stage "
             << (h != homes.end() ? h->second.stage : -1) << " (pp rank "
             << (h != homes.end() ? sched.getRank(h->second.stage) : -1)
             << "), and pp rank " << r
             << " computes no part of its gradient, so its copy would go "
                "stale: only the ranks that compute parts of a shared "
                "weight's gradient keep a copy of it; put every reader of it "
                "on one stage";
    }
    SmallVector<Value> outs;
    if (forwardOnly) {
      // Tags after the schedule's messages and the shared parts'.
      int64_t tag = 2 * numMicrobatches * numStages * tagWidth;
      for (const SharedGroup &g : groups)
        tag += int64_t(g.parts.size());
      const int64_t last = sched.getRank(numStages - 1);
      for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
        Operation *d = v.getDefiningOp();
        // A returned argument or a value of weights and constants alone:
        // every rank has it.
        if (!d || !homes.count(d)) {
          if (!ensure(v))
            return ret.emitOpError() << "output " << i
                                     << " is not computed on pp rank " << r;
          outs.push_back(map.lookup(v));
          continue;
        }
        if (r == last) {
          if (!ensure(v))
            return ret.emitOpError()
                   << "output " << i << " is not computed on pp rank " << r;
          for (int64_t p = 0; p < ppSize; ++p)
            if (p != r)
              tagClone(SendOp::create(b, v.getLoc(), map.lookup(v), meshRef,
                                      axes, b.getI64IntegerAttr(p),
                                      b.getI64IntegerAttr(tag + int64_t(i))),
                       "SEND", numStages - 1, -1);
          outs.push_back(map.lookup(v));
          continue;
        }
        auto recv = RecvOp::create(b, v.getLoc(), v.getType(), meshRef, axes,
                                   b.getI64IntegerAttr(last),
                                   b.getI64IntegerAttr(tag + int64_t(i)));
        tagClone(recv, "RECV", numStages - 1, -1);
        outs.push_back(recv.getResult());
      }
    } else if (hasLoss)
      for (Value v : ret.getOperands()) {
        if (!ensure(v))
          return ret.emitOpError()
                 << "the loss is not computed on pp rank " << r;
        outs.push_back(map.lookup(v));
      }
    func::ReturnOp::create(b, ret.getLoc(), outs);
    return f;
  }
};

} // namespace
} // namespace mlir::tessel
