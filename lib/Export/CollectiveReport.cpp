//===- CollectiveReport.cpp - what a partitioned program sends ------------===//

#include "tessel/Export/Reports.h"
#include "tessel/Export/MemoryReport.h"
#include "tessel/Export/OutputCollectives.h"

#include "dialects/tessel/TesselOps.h"
#include "dialects/tessel/PipelineAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"

#include <map>

using namespace mlir;
using namespace mlir::tessel;

namespace {
struct Entry {
  std::string what;
  std::string axes;
  int64_t bytes;
  // Training steps: 0 forward, 1 backward (and update); -1 otherwise.
  int section = -1;
  // Whether a split weight is within reach (nextToSplitWeight); outputs'
  // gathers count as needed.
  bool needed = true;
  // A pipeline: the pp coordinate whose function runs it (-1: every rank).
  int64_t ppRank = -1;
};

/// A pipeline rank's function's pp coordinate, or -1.
int64_t ppRankOf(Operation *op) {
  auto fn = isa<func::FuncOp>(op) ? cast<func::FuncOp>(op)
                                  : op->getParentOfType<func::FuncOp>();
  auto r = fn ? fn->getAttrOfType<IntegerAttr>(kPpRankAttr) : IntegerAttr();
  return r ? r.getInt() : -1;
}

/// Whether `w` is a weight the plan split (a dim with mesh axes).
bool isSplitWeight(Operation *w) {
  if (!isa_and_nonnull<WeightOp>(w))
    return false;
  auto spec = w->getAttrOfType<TensorShardingAttr>(
      TesselDialect::kGlobalShardingAttrName);
  return spec && llvm::any_of(spec.getDims(), [](DimShardingAttr d) {
           return !d.getAxes().empty();
         });
}

/// Whether the collective `c` moves what a split weight makes necessary: a
/// matmul, gemm, convolution or gather reading a split weight made its
/// operand, directly or through one more op (a row-parallel matmul's partial
/// sum; a column-split embedding's lookup, through the sum of the
/// embeddings). A collective with no such op near it comes from activations
/// left sharded into ops that need them whole (norms, reductions): traffic
/// the plan's weights do not require. (Elementwise readers do not count:
/// propagation splits a norm's scale along with its sharded input.)
bool nextToSplitWeight(Operation *c) {
  SmallVector<std::pair<Operation *, int>> work;
  llvm::SmallPtrSet<Operation *, 16> seen;
  for (Value v : c->getOperands())
    if (Operation *def = v.getDefiningOp())
      work.push_back({def, 1});
  while (!work.empty()) {
    auto [op, depth] = work.pop_back_val();
    if (!seen.insert(op).second || op->hasAttr("axes")) // a collective
      continue;
    if (isa<MatmulOp, GemmOp, Conv2DOp, GatherOp>(op) &&
        llvm::any_of(op->getOperands(), [](Value v) {
          return isSplitWeight(v.getDefiningOp());
        }))
      return true;
    if (depth >= 2)
      continue;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp())
        work.push_back({def, depth + 1});
  }
  return false;
}

std::string axesOf(ArrayAttr axes) {
  SmallVector<StringRef> names;
  for (Attribute a : axes)
    names.push_back(cast<StringAttr>(a).getValue());
  return "[" + llvm::join(names, ", ") + "]";
}
} // namespace

void mlir::tessel::printCollectiveReport(ModuleOp module, raw_ostream &os) {
  int64_t ranks = 1;
  std::string meshDesc = "one device";
  // The pp coordinate of each rank (the first axis major), with a pipeline.
  std::vector<int64_t> ppOfRank;
  for (MeshOp mesh : module.getOps<MeshOp>()) {
    ranks = mesh.getNumDevices();
    int64_t inner = 1, ppSize = 0;
    for (auto [n, size] :
         llvm::reverse(llvm::zip(mesh.getAxisNames(), mesh.getAxisSizes()))) {
      if (cast<StringAttr>(n).getValue() == kPipelineAxis) {
        ppSize = size;
        break;
      }
      inner *= size;
    }
    ppOfRank.clear();
    if (ppSize > 0)
      for (int64_t r = 0; r < ranks; ++r)
        ppOfRank.push_back(r / inner % ppSize);
    meshDesc.clear();
    llvm::raw_string_ostream ms(meshDesc);
    for (auto [i, n, s] :
         llvm::enumerate(mesh.getAxisNames(), mesh.getAxisSizes()))
      ms << (i ? "," : "") << cast<StringAttr>(n).getValue() << "=" << s;
  }
  std::vector<Entry> entries;
  std::vector<int64_t> buckets;
  Operation *loss = lossOp(module);
  module.walk([&](Operation *op) {
    auto axes = op->getAttrOfType<ArrayAttr>("axes");
    if (!axes || !isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp,
                      CollectivePermuteOp, BroadcastOp, SendOp, RecvOp>(op))
      return;
    Type t = op->getNumOperands() ? op->getOperand(0).getType()
                                  : op->getResult(0).getType();
    std::string what = op->getName().stripDialect().str();
    if (auto ar = dyn_cast<AllReduceOp>(op))
      what += " " + stringifyReductionKind(ar.getKind()).str();
    if (auto rs = dyn_cast<ReduceScatterOp>(op))
      what += " " + stringifyReductionKind(rs.getKind()).str();
    if (auto bucket = op->getAttrOfType<IntegerAttr>(
            TesselDialect::kBucketAttrName)) {
      auto cat = op->getOperand(0).getDefiningOp<ConcatOp>();
      size_t n = cat ? cat.getInputs().size() : 1;
      what += " (bucket " + std::to_string(bucket.getInt()) + ": " +
              std::to_string(n) + " gradient" + (n == 1 ? "" : "s") + ")";
      buckets.push_back(tensorBytes(t));
    } else {
      // FSDP's prefetch: issued ahead of its use, waited for right before.
      std::string async =
          !op->hasAttr(TesselDialect::kAsyncAttrName) ? ""
          : isa<ReduceScatterOp>(op)                   ? "async"
                                                       : "prefetched";
      if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
        what += " (" + loc.getName().str() + (async.empty() ? "" : ", ") +
                async + ")";
      else if (!async.empty())
        what += " (" + async + ")";
    }
    int section = -1;
    if (loss && loss->getBlock() == op->getBlock())
      section = loss->isBeforeInBlock(op) ? 1 : 0;
    entries.push_back({what, axesOf(axes), tensorBytes(t), section,
                       nextToSplitWeight(op), ppRankOf(op)});
  });
  // The runtime's own collectives: outputs leave whole (ExportArtifact's
  // emitOutput), a partial result all-reduced, a sharded one all-gathered
  // dim by dim.
  size_t outputCollectives = 0;
  size_t programCollectives = entries.size();
  // They run after the step: in a training step's last section.
  int outSection = entries.empty() ? -1 : entries.back().section;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal() || fn.isPrivate())
      continue;
    for (const OutputCollective &c : getOutputCollectives(fn)) {
      std::string what =
          c.allReduce ? "all_reduce " + stringifyReductionKind(c.reduction).str()
                      : std::string("all_gather");
      entries.push_back({what + " (output '" + c.output + "')",
                         "[" + llvm::join(c.axes, ", ") + "]", c.bytes,
                         outSection, true, ppRankOf(fn)});
      ++outputCollectives;
    }
  }
  // A pipeline: each rank runs the function of its pp coordinate, and its
  // collectives only.
  const bool pipelined =
      !ppOfRank.empty() &&
      llvm::any_of(entries, [](const Entry &e) { return e.ppRank >= 0; });
  auto runsOn = [&](const Entry &e, int64_t r) {
    return !pipelined || e.ppRank < 0 || e.ppRank == ppOfRank[r];
  };
  auto countOn = [&](int64_t r) {
    return llvm::count_if(entries, [&](const Entry &e) { return runsOn(e, r); });
  };
  os << "collective report: mesh " << meshDesc << ", " << ranks << " rank"
     << (ranks == 1 ? "" : "s") << ", ";
  if (pipelined) {
    std::map<int64_t, int64_t> perPp;
    for (int64_t r = 0; r < ranks; ++r)
      perPp[ppOfRank[r]] = countOn(r);
    os << "collectives per rank:";
    for (auto [i, pp] : llvm::enumerate(perPp))
      os << (i ? "," : "") << " " << pp.second << " on pp rank " << pp.first;
  } else {
    os << entries.size() << " collectives per rank";
  }
  if (outputCollectives)
    os << " (" << outputCollectives << " of them making the outputs whole)";
  os << "\n";
  int64_t allBytes = 0, allCalls = 0, perRank = 0;
  for (int64_t r = 0; r < ranks; ++r) {
    os << "rank " << r;
    if (pipelined)
      os << " (pp rank " << ppOfRank[r] << ")";
    os << ":\n";
    int section = -1;
    int64_t bytes = 0;
    for (const Entry &e : entries) {
      if (!runsOn(e, r))
        continue;
      if (e.section != section && e.section >= 0)
        os << (e.section ? "  backward:\n" : "  forward:\n");
      section = e.section;
      os << (section >= 0 ? "    " : "  ") << e.what << " over " << e.axes
         << ": " << e.bytes << " bytes" << "\n";
      bytes += e.bytes;
    }
    os << "  total: " << bytes << " bytes\n";
    allBytes += bytes;
    allCalls += countOn(r);
    perRank = std::max(perRank, bytes);
  }
  os << "all ranks: " << allBytes << " bytes in " << allCalls
     << " collective calls\n";
  // Far above what the split weights require (inference programs; a
  // training step's gathers of weights and gradients have other reasons):
  // more collectives away from any split weight than next to one, a plan
  // whose activations stay sharded into norms and reductions (e.g. a norm
  // the import did not recognise).
  size_t stray = 0, near = 0;
  int64_t strayBytes = 0;
  const Entry *firstStray = nullptr;
  for (const Entry &e : ArrayRef(entries).take_front(programCollectives)) {
    if (e.needed) {
      ++near;
      continue;
    }
    ++stray;
    strayBytes += e.bytes;
    if (!firstStray)
      firstStray = &e;
  }
  if (!loss && !pipelined && stray > near && stray >= 2)
    os << "warning: " << stray << " of " << entries.size()
       << " collectives per rank (" << strayBytes << " of " << perRank
       << " bytes) have no split weight near them (first: "
       << firstStray->what << " over " << firstStray->axes
       << "): activations stay sharded into ops that need them whole, far "
          "above the "
       << near
       << " the split weights require. Check that the model's norms are "
          "recognised (tessel.layer_norm in --emit=propagated), or end each "
          "column split in a row-parallel weight (split: {dim: 0}) so that "
          "the activation after it is whole again (docs/plans.md)\n";
  if (!buckets.empty()) {
    os << "gradient buckets: " << buckets.size() << " per rank, issued during "
          "the backward (bytes:";
    for (int64_t b : buckets)
      os << " " << b;
    os << ")\n";
  }
}
