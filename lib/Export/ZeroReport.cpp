//===- ZeroReport.cpp - a plugin's memory beside ZeRO's figures -----------===//
//
// tesselc --plugin ... --report: per rank, the planned bytes of the model
// states (parameters, gradients, optimizer state) and the activations,
// beside the ZeRO paper's analytic figures for Psi parameters over N ranks
// (fp32 Adam: DDP 16 Psi, zero1 4 Psi + 4 Psi + 8 Psi / N, zero2 4 Psi +
// 12 Psi / N, fsdp 16 Psi / N). A pipeline's figures are per pp rank:
// each holds its stages' states, sharded over dp within the stage.
//
//===----------------------------------------------------------------------===//

#include "tessel/Export/Reports.h"

#include "tessel/Export/MemoryReport.h"
#include "dialects/tessel/PipelineAttrs.h"

#include "dialects/tessel/TesselOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"

#include <map>
#include <set>

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// One rank's planned model states of a partitioned training step, by the
/// ZeRO paper's kinds, and the paper's analytic figures for them.
struct ZeroMemory {
  /// Psi: the trained parameters' elements (whole, not per rank).
  int64_t parameters = 0;
  /// The parameters' elements that one data-parallel group shares: Psi
  /// divided by the other axes (tp) that split them; the paper's Psi then.
  int64_t partitionParameters = 0;
  /// N: the size of the data-parallel axis.
  int64_t dp = 1;
  /// Per rank, planned: the trained parameters, the gradients the updates
  /// read (whole where all-reduced, a block where reduce-scattered), the
  /// optimizer state, the forward's activations kept for the backward.
  int64_t paramBytes = 0, gradBytes = 0, stateBytes = 0, activationBytes = 0;
  /// A pipeline rank's arena (its microbatches in flight and the backward's
  /// values, interleaved by the schedule), printed instead of the
  /// activations; -1: not a pipeline rank.
  int64_t pipelineArenaBytes = -1;
  /// The analytic figures for the stage: params 4 Psi (/ N from stage 3),
  /// grads 4 Psi (/ N from stage 2), state K Psi (/ N from stage 1), with
  /// 4 = the parameters' element bytes and K = the whole optimizer state's
  /// bytes per parameter (8: Adam's two fp32 moments).
  double analyticParams = 0, analyticGrads = 0, analyticState = 0;
};

/// The elements of the whole tensor whose block `local` is under `spec`.
int64_t globalElements(MeshOp mesh, TensorShardingAttr spec,
                       RankedTensorType local) {
  int64_t n = 1;
  for (auto [d, size] : llvm::enumerate(local.getShape())) {
    int64_t whole = size;
    if (spec && d < spec.getDims().size()) {
      DimShardingAttr dim = spec.getDims()[d];
      for (StringAttr a : dim.getAxes())
        whole *= mesh ? mesh.getAxisSize(a.getValue()).value_or(1) : 1;
      whole -= dim.getPad();
    }
    n *= whole;
  }
  return n;
}

/// The figures of one rank's program `fn` (a pipeline rank's: its stages'
/// model states); activationBytes left 0.
ZeroMemory planZeroMemory(func::FuncOp fn, int stage, StringRef axis = "dp") {
  ZeroMemory z;
  MeshOp mesh;
  if (auto module = fn->getParentOfType<ModuleOp>())
    for (MeshOp m : module.getOps<MeshOp>())
      mesh = m;
  if (mesh)
    z.dp = mesh.getAxisSize(axis).value_or(1);

  // The trained parameters: weights with data that the step assigns.
  llvm::StringSet<> assigned, seen;
  fn.walk([&](AssignOp a) {
    if (auto w = a.getWeight().getDefiningOp<WeightOp>(); w && !w.getZeros())
      assigned.insert(w.getName());
  });
  int64_t elemBytes = 4, globalStateBytes = 0;
  fn.walk([&](WeightOp w) {
    auto spec = w->getAttrOfType<TensorShardingAttr>(
        TesselDialect::kGlobalShardingAttrName);
    int64_t whole = globalElements(mesh, spec, w.getType());
    if (!seen.insert(w.getName()).second)
      return;
    if (w.getZeros()) {
      z.stateBytes += tensorBytes(w.getType());
      // Per-parameter state (not the scalar step count).
      if (w.getType().getRank() > 0)
        globalStateBytes +=
            whole * std::max<int64_t>(w.getType().getElementTypeBitWidth() / 8, 1);
      return;
    }
    if (!assigned.contains(w.getName()))
      return;
    z.parameters += whole;
    z.paramBytes += tensorBytes(w.getType());
    // This rank's block times the dp shards of it: what its dp group holds.
    int64_t dpShards = 1;
    if (spec)
      for (DimShardingAttr d : spec.getDims())
        if (llvm::any_of(d.getAxes(),
                         [&](StringAttr a) { return a.getValue() == axis; }))
          dpShards *= z.dp;
    z.partitionParameters += w.getType().getNumElements() * dpShards;
    elemBytes = std::max<int64_t>(w.getType().getElementTypeBitWidth() / 8, 1);
  });
  // The gradient each update reads, before this rank keeps its block of it
  // (ZeRO stage 1 slices the all-reduced gradient).
  fn.walk([&](Operation *op) {
    if (!isa<AdamUpdateOp, SgdUpdateOp>(op))
      return;
    Value g = op->getOperand(1);
    while (auto slice = g.getDefiningOp<LocalSliceOp>())
      g = slice.getInput();
    z.gradBytes += tensorBytes(g.getType());
  });

  double n = static_cast<double>(z.dp);
  double k = z.parameters ? double(globalStateBytes) / double(z.parameters) : 0.0;
  double psi = static_cast<double>(z.partitionParameters);
  z.analyticParams = elemBytes * psi / (stage >= 3 ? n : 1.0);
  z.analyticGrads = elemBytes * psi / (stage >= 2 ? n : 1.0);
  z.analyticState = k * psi / (stage >= 1 ? n : 1.0);
  return z;
}

/// The figures of `module` (partitioned) under ZeRO stage `stage` (0: DDP)
/// over the mesh axis `axis`.
ZeroMemory planZeroMemory(ModuleOp module, int stage, StringRef axis = "dp") {
  func::FuncOp fn;
  for (auto f : module.getOps<func::FuncOp>())
    if (!f.isExternal() && !f.isPrivate())
      fn = f;
  if (!fn) {
    ZeroMemory z;
    for (MeshOp m : module.getOps<MeshOp>())
      z.dp = m.getAxisSize(axis).value_or(1);
    return z;
  }
  ZeroMemory z = planZeroMemory(fn, stage, axis);
  z.activationBytes = planMemory(module).keptForBackward;
  return z;
}

/// Prints `z` for --plugin `plugin`; `where` follows the plugin's name in
/// the heading (", pp rank 1 (stage 1)").
void printZeroFigures(const ZeroMemory &z, StringRef plugin, int stage,
                      StringRef where, llvm::raw_ostream &os) {
  double psi = static_cast<double>(z.partitionParameters);
  auto ratio = [](double planned, double analytic) {
    return analytic > 0 ? planned / analytic : 0.0;
  };
  // The paper's formula for this stage, in multiples of Psi.
  double pk = psi ? z.analyticParams * (stage >= 3 ? z.dp : 1) / psi : 0;
  double gk = psi ? z.analyticGrads * (stage >= 2 ? z.dp : 1) / psi : 0;
  double sk = psi ? z.analyticState * (stage >= 1 ? z.dp : 1) / psi : 0;
  auto term = [](double k, bool sharded) {
    std::string s;
    llvm::raw_string_ostream ss(s);
    ss << llvm::format("%g", k) << " Psi" << (sharded ? " / N" : "");
    return s;
  };
  os << "plugin " << plugin << where
     << ": model states per rank, planned, beside the "
     << "ZeRO paper's figures (Psi = " << z.partitionParameters
     << " parameters";
  if (z.partitionParameters != z.parameters)
    os << " per model-parallel partition, of " << z.parameters;
  os << ", N = dp = " << z.dp << ")\n";
  auto row = [&](StringRef what, int64_t planned, double analytic,
                 const std::string &formula) {
    os << llvm::format("  %-16s %12lld bytes   analytic %-19s %12.0f bytes",
                       what.str().c_str(), static_cast<long long>(planned),
                       formula.c_str(), analytic);
    os << llvm::format("   (x%.3f)\n", ratio(planned, analytic));
  };
  row("parameters", z.paramBytes, z.analyticParams, term(pk, stage >= 3));
  row("gradients", z.gradBytes, z.analyticGrads, term(gk, stage >= 2));
  row("optimizer state", z.stateBytes, z.analyticState, term(sk, stage >= 1));
  int64_t total = z.paramBytes + z.gradBytes + z.stateBytes;
  double analytic = z.analyticParams + z.analyticGrads + z.analyticState;
  double whole = (stage < 3 ? pk : 0) + (stage < 2 ? gk : 0) + (stage < 1 ? sk : 0);
  double split = pk + gk + sk - whole;
  std::string formula = whole ? term(whole, false) : "";
  if (split)
    formula += (formula.empty() ? "" : " + ") + term(split, true);
  row("total", total, analytic, formula);
  if (z.pipelineArenaBytes >= 0) {
    os << "  arena            "
       << llvm::format("%12lld", static_cast<long long>(z.pipelineArenaBytes))
       << " bytes   (the microbatches in flight and the backward's values, "
          "as the schedule runs them; the paper counts them apart)\n";
    return;
  }
  os << "  activations      " << llvm::format("%12lld", static_cast<long long>(
                                                          z.activationBytes))
     << " bytes   (the forward's values kept for the backward; the paper "
        "counts them apart)\n";
}

} // namespace

void mlir::tessel::printZeroReport(ModuleOp module, StringRef plugin,
                                   int stage, llvm::raw_ostream &os) {
  // A pipeline: each pp rank's program holds its stages' model states.
  std::map<int64_t, func::FuncOp> ranks;
  for (auto fn : module.getOps<func::FuncOp>())
    if (auto r = fn->getAttrOfType<IntegerAttr>(kPpRankAttr))
      ranks[r.getInt()] = fn;
  if (ranks.empty()) {
    printZeroFigures(planZeroMemory(module, stage), plugin, stage, "", os);
    return;
  }
  for (auto &[r, fn] : ranks) {
    ZeroMemory z = planZeroMemory(fn, stage);
    std::set<int64_t> stages;
    fn.walk([&](Operation *op) {
      if (op->hasAttr(kPhaseAttr) && getPipelineInt(op, kStageAttr, -1) >= 0)
        stages.insert(getPipelineInt(op, kStageAttr, -1));
    });
    std::string where = ", pp rank " + std::to_string(r) + " (stage";
    where += stages.size() == 1 ? " " : "s ";
    for (auto [i, s] : llvm::enumerate(stages))
      where += (i ? ", " : "") + std::to_string(s);
    where += ")";
    // The arena holds the microbatches in flight (the schedule's), with the
    // backward's values: the pipeline's memory, not the forward's alone.
    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
    Operation *loss = ret.getNumOperands() ? ret.getOperand(0).getDefiningOp()
                                           : nullptr;
    z.pipelineArenaBytes = planMemory(fn, loss).arena;
    printZeroFigures(z, plugin, stage, where, os);
  }
}
