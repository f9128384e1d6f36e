//===- ExpandPipeline.cpp - a pipeline of M microbatches from 3 -----------===//
//
// tessel/Predict/ExpandPipeline.h. Each pp rank's function is read against
// the schedule it was lowered on (tessel.pp_schedule): the tagged ops in
// order are the actions' ops, the untagged ones are free (values of weights
// and constants alone, cloned where first needed), and what follows the last
// action (a tied weight's exchange, the outputs' messages) is the tail. The
// rank's function for M microbatches then takes the actions of the schedule
// for M, each cloned from the action of the same kind and stage on the
// copy of its role: microbatch 0 from copy 0, the last from copy 2, the
// others from copy 1.
//
//===----------------------------------------------------------------------===//

#include "tessel/Predict/ExpandPipeline.h"

#include "dialects/tessel/PipelineAttrs.h"
#include "dialects/tessel/TesselOps.h"
#include "tessel/Schedule/Registry.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::tessel;
namespace pl = ::tessel::pipeline;

namespace {

llvm::Error fail(const Twine &why) {
  return llvm::createStringError("cannot expand the pipeline: " + why);
}

StringRef phaseName(pl::ActionKind k) {
  if (pl::isSend(k))
    return "SEND";
  if (pl::isRecv(k))
    return "RECV";
  return pl::getActionKindName(k);
}

int64_t tagOf(Operation *op) {
  if (auto s = dyn_cast<SendOp>(op))
    return s.getTag();
  if (auto r = dyn_cast<RecvOp>(op))
    return r.getTag();
  return -1;
}

void setTag(Operation *op, int64_t tag) {
  Builder b(op->getContext());
  if (auto s = dyn_cast<SendOp>(op))
    s.setTagAttr(b.getI64IntegerAttr(tag));
  else if (auto r = dyn_cast<RecvOp>(op))
    r.setTagAttr(b.getI64IntegerAttr(tag));
}

class RankExpander {
public:
  RankExpander(func::FuncOp fn, const pl::Schedule &few,
               const pl::Schedule &many, int64_t rank, int64_t tagWidth)
      : fn(fn), few(few), many(many), rank(rank), tagWidth(tagWidth),
        copies(few.getNumMicrobatches()), m(many.getNumMicrobatches()) {}

  llvm::Expected<func::FuncOp> run(OpBuilder &top);

private:
  func::FuncOp fn;
  const pl::Schedule &few, &many;
  int64_t rank, tagWidth, copies, m;

  /// The ops of each action of `few` on this rank, by its index.
  std::vector<SmallVector<Operation *>> actionOps;
  SmallVector<Operation *> tail;
  llvm::DenseSet<Operation *> freeOps;
  /// Free ops that one microbatch copy alone reads (its slice of the
  /// batch, a mask from its ids, a scalar of its backward): one per
  /// microbatch.
  llvm::DenseSet<Operation *> perMicrobatch;
  /// The copy (microbatch tag) of each action op; -1: once per step.
  DenseMap<Operation *, int64_t> copyOf;

  OpBuilder *b = nullptr;
  IRMapping shared;
  std::vector<DenseMap<Value, Value>> instances;

  int64_t roleOf(int64_t mb) const {
    if (mb == 0)
      return 0;
    return mb == m - 1 ? copies - 1 : 1;
  }
  bool matches(Operation *op, const pl::Action &a) const;
  llvm::Error split();
  llvm::Expected<Value> ensureFree(Value v, int64_t mb);
  llvm::Expected<Value> lookup(Value v, Operation *reader, int64_t copy,
                               int64_t mb);
  llvm::Error cloneAs(Operation *op, int64_t copy, int64_t mb,
                      std::optional<int64_t> messageTag);
};

bool RankExpander::matches(Operation *op, const pl::Action &a) const {
  auto phase = op->getAttrOfType<StringAttr>(kPhaseAttr);
  if (!phase || phase.getValue() != phaseName(a.kind) ||
      getPipelineInt(op, kStageAttr) != a.stage)
    return false;
  const int64_t mb =
      a.kind == pl::ActionKind::OptimizerStep ? -1 : int64_t(a.microbatch);
  if (getPipelineInt(op, kMicrobatchAttr) != mb)
    return false;
  if (pl::isCommunication(a.kind))
    return tagOf(op) / tagWidth == few.getMessageTag(a);
  return true;
}

llvm::Error RankExpander::split() {
  ArrayRef<pl::Action> actions = few.getActions(rank);
  actionOps.assign(actions.size(), {});
  size_t cursor = 0;
  for (Operation &op : fn.getBody().front().without_terminator()) {
    if (!op.hasAttr(kPhaseAttr)) {
      freeOps.insert(&op);
      continue;
    }
    while (cursor < actions.size() && !matches(&op, actions[cursor]))
      ++cursor;
    if (cursor == actions.size()) {
      if (getPipelineInt(&op, kMicrobatchAttr) >= 0)
        return fail("an op of microbatch " +
                    Twine(getPipelineInt(&op, kMicrobatchAttr)) +
                    " on pp rank " + Twine(rank) +
                    " is in no action of schedule '" + few.getName() +
                    "', in order");
      tail.push_back(&op);
      copyOf[&op] = -1;
      continue;
    }
    actionOps[cursor].push_back(&op);
    copyOf[&op] = getPipelineInt(&op, kMicrobatchAttr);
  }
  // Free ops that one copy alone reads, through free ops or not, are that
  // copy's: the other microbatches have their own.
  DenseMap<Operation *, int64_t> readers; // -2: several, or once per step
  for (Operation &op :
       llvm::reverse(fn.getBody().front().without_terminator())) {
    if (!freeOps.contains(&op))
      continue;
    std::optional<int64_t> only;
    bool several = false;
    for (Operation *user : op.getUsers()) {
      int64_t c = -2;
      if (auto it = copyOf.find(user); it != copyOf.end())
        c = it->second;
      else if (auto it = readers.find(user); it != readers.end())
        c = it->second;
      several |= c < 0 || (only && *only != c);
      only = c;
    }
    readers[&op] = several || !only ? -2 : *only;
    if (!several && only)
      perMicrobatch.insert(&op);
  }
  return llvm::Error::success();
}

/// `v`, a free value (or an argument), for microbatch `mb` (-1: once per
/// step): cloned with what it reads where first needed.
llvm::Expected<Value> RankExpander::ensureFree(Value v, int64_t mb) {
  Operation *d = v.getDefiningOp();
  if (!d || !perMicrobatch.contains(d) || mb < 0) {
    if (shared.contains(v))
      return shared.lookup(v);
  } else if (auto it = instances[mb].find(v); it != instances[mb].end()) {
    return it->second;
  }
  if (!d || !freeOps.contains(d))
    return fail("a value read on pp rank " + Twine(rank) +
                " is neither an argument, a free value nor an action's");
  const int64_t at = perMicrobatch.contains(d) ? mb : -1;
  IRMapping map;
  for (Value o : d->getOperands()) {
    llvm::Expected<Value> w = ensureFree(o, at);
    if (!w)
      return w.takeError();
    map.map(o, *w);
  }
  Operation *c = b->clone(*d, map);
  for (auto [from, to] : llvm::zip(d->getResults(), c->getResults())) {
    if (at >= 0)
      instances[at][from] = to;
    else
      shared.map(from, to);
  }
  return c->getResult(cast<OpResult>(v).getResultNumber());
}

/// The value `reader` (of copy `copy`, cloned for microbatch `mb`; -1:
/// once per step) reads for `v`.
llvm::Expected<Value> RankExpander::lookup(Value v, Operation *reader,
                                           int64_t copy, int64_t mb) {
  Operation *d = v.getDefiningOp();
  auto it = d ? copyOf.find(d) : copyOf.end();
  if (it == copyOf.end())
    return ensureFree(v, mb);
  const int64_t from = it->second;
  auto at = [&](int64_t instance, Value w) -> llvm::Expected<Value> {
    auto found = instances[instance].find(w);
    if (found == instances[instance].end())
      return fail("pp rank " + Twine(rank) + " reads a value of microbatch " +
                  Twine(instance) + " before it is computed");
    return found->second;
  };
  if (from < 0)
    return shared.lookup(v);
  if (copy < 0) {
    // Once per step: the sums after the last microbatch.
    if (from == copies - 1)
      return at(m - 1, v);
    if (from == 0)
      return at(0, v);
    return fail("a once-per-step op on pp rank " + Twine(rank) +
                " reads a value of microbatch copy " + Twine(from));
  }
  if (from == copy)
    return at(mb, v);
  if (from == copy - 1 && mb >= 1) {
    // An accumulation: the sum so far, of the microbatch before.
    if (roleOf(mb - 1) == from)
      return at(mb - 1, v);
    if (roleOf(mb - 1) == copy && isa<AddOp>(reader) &&
        reader->getNumResults() == 1 &&
        reader->getResult(0).getType() == v.getType())
      return at(mb - 1, reader->getResult(0));
  }
  return fail("an op of microbatch copy " + Twine(copy) + " on pp rank " +
              Twine(rank) + " reads a value of copy " + Twine(from) +
              " that is not an accumulation");
}

llvm::Error RankExpander::cloneAs(Operation *op, int64_t copy, int64_t mb,
                                  std::optional<int64_t> messageTag) {
  IRMapping map;
  for (Value v : op->getOperands()) {
    llvm::Expected<Value> w = lookup(v, op, copy, mb);
    if (!w)
      return w.takeError();
    map.map(v, *w);
  }
  Operation *c = b->clone(*op, map);
  if (copy >= 0)
    c->setAttr(kMicrobatchAttr, b->getI64IntegerAttr(mb));
  if (messageTag)
    setTag(c, *messageTag);
  for (auto [from, to] : llvm::zip(op->getResults(), c->getResults())) {
    if (copy >= 0)
      instances[mb][from] = to;
    else
      shared.map(from, to);
  }
  return llvm::Error::success();
}

llvm::Expected<func::FuncOp> RankExpander::run(OpBuilder &top) {
  if (llvm::Error e = split())
    return std::move(e);
  // The first actions of the few schedule by (kind, stage, copy).
  std::map<std::tuple<int, int64_t, int64_t>, size_t> byKey;
  ArrayRef<pl::Action> fewActions = few.getActions(rank);
  for (auto [i, a] : llvm::enumerate(fewActions)) {
    int64_t mb =
        a.kind == pl::ActionKind::OptimizerStep ? -1 : int64_t(a.microbatch);
    byKey.try_emplace({int(a.kind), a.stage, mb}, i);
  }

  auto g = cast<func::FuncOp>(top.cloneWithoutRegions(*fn));
  Block *body = g.addEntryBlock();
  OpBuilder builder = OpBuilder::atBlockBegin(body);
  b = &builder;
  for (auto [from, to] : llvm::zip(fn.getArguments(), g.getArguments()))
    shared.map(from, to);
  instances.assign(m, DenseMap<Value, Value>());
  const int64_t stages = few.getNumStages();
  for (const pl::Action &a : many.getActions(rank)) {
    const bool step = a.kind == pl::ActionKind::OptimizerStep;
    const int64_t role = step ? -1 : roleOf(a.microbatch);
    auto it = byKey.find({int(a.kind), a.stage, role});
    if (it == byKey.end())
      continue; // an action with no ops on the copies either
    for (Operation *op : actionOps[it->second]) {
      std::optional<int64_t> tag;
      if (pl::isCommunication(a.kind))
        tag = many.getMessageTag(a) * tagWidth + tagOf(op) % tagWidth;
      if (llvm::Error e =
              cloneAs(op, step ? -1 : role, step ? -1 : a.microbatch, tag))
        return std::move(e);
    }
  }
  // After the schedule's messages, those of the tail, shifted past the M
  // schedule's.
  const int64_t shift = 2 * (m - copies) * stages * tagWidth;
  for (Operation *op : tail) {
    std::optional<int64_t> tag;
    if (isa<SendOp, RecvOp>(op))
      tag = tagOf(op) + shift;
    if (llvm::Error e = cloneAs(op, -1, -1, tag))
      return std::move(e);
  }
  // Free ops nothing reads (the update of the optimizer's step count).
  for (Operation &op : fn.getBody().front().without_terminator())
    if (freeOps.contains(&op) && op.use_empty())
      if (llvm::Error e = cloneAs(&op, -1, -1, std::nullopt))
        return std::move(e);
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  SmallVector<Value> outs;
  for (Value v : ret.getOperands()) {
    llvm::Expected<Value> w = lookup(v, ret, -1, -1);
    if (!w)
      return w.takeError();
    outs.push_back(*w);
  }
  func::ReturnOp::create(builder, ret.getLoc(), outs);
  return g;
}

} // namespace

llvm::Expected<OwningOpRef<ModuleOp>>
mlir::tessel::expandPipeline(ModuleOp module, int64_t microbatches) {
  OwningOpRef<ModuleOp> out(cast<ModuleOp>(module->clone()));
  SmallVector<func::FuncOp> ranks;
  for (auto fn : out->getOps<func::FuncOp>())
    if (fn->hasAttr(kPpRankAttr))
      ranks.push_back(fn);
  if (ranks.empty())
    return fail("the module has no pp rank functions");
  for (func::FuncOp fn : ranks) {
    auto attrs = fn->getAttrOfType<DictionaryAttr>(kPpScheduleAttr);
    if (!attrs)
      return fail("pp rank function '" + fn.getSymName() + "' has no " +
                  kPpScheduleAttr);
    auto name = attrs.getAs<StringAttr>("name");
    const int64_t chunks = attrs.getAs<IntegerAttr>("chunks").getInt();
    const int64_t copies = attrs.getAs<IntegerAttr>("microbatches").getInt();
    const int64_t tagWidth = attrs.getAs<IntegerAttr>("tag_width").getInt();
    if (microbatches == copies)
      continue;
    if (copies != kExpandedPipelineCopies || microbatches < copies)
      return fail("'" + fn.getSymName() + "' has " + Twine(copies) +
                  " microbatches; expanding to " + Twine(microbatches) +
                  " needs " + Twine(kExpandedPipelineCopies));
    const int64_t rank = fn->getAttrOfType<IntegerAttr>(kPpRankAttr).getInt();
    pl::ScheduleOptions o;
    o.ranks = int32_t(ranks.size());
    o.chunks = int32_t(chunks);
    o.microbatches = int32_t(copies);
    llvm::Expected<pl::Schedule> few =
        pl::ScheduleRegistry::getGlobal().build(name.getValue(), o);
    if (!few)
      return few.takeError();
    o.microbatches = int32_t(microbatches);
    llvm::Expected<pl::Schedule> many =
        pl::ScheduleRegistry::getGlobal().build(name.getValue(), o);
    if (!many)
      return many.takeError();
    OpBuilder top(fn);
    RankExpander expander(fn, *few, *many, rank, tagWidth);
    llvm::Expected<func::FuncOp> g = expander.run(top);
    if (!g)
      return g.takeError();
    Builder bb(fn.getContext());
    NamedAttrList updated(attrs);
    updated.set("microbatches", bb.getI64IntegerAttr(microbatches));
    (*g)->setAttr(kPpScheduleAttr, updated.getDictionary(fn.getContext()));
    fn.erase();
  }
  return std::move(out);
}
