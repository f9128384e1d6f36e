//===- PipelineReport.cpp - tesselc --report's pipeline table -------------===//
#include "tessel/Export/Reports.h"

#include "dialects/tessel/TesselOps.h"
#include "tessel/Export/MemoryReport.h"
#include "dialects/tessel/OpCost.h"
#include "dialects/tessel/PipelineAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"

#include <map>

using namespace mlir;
using namespace mlir::tessel;

namespace {

struct StageFigures {
  int64_t rank = -1;
  int64_t forwardOps = 0, instructions = 0;
  int64_t params = 0, paramBytes = 0;
  double flops = 0, forwardFlops = 0;
  // Per microbatch 0: (peer rank, type) of each send, in order.
  std::vector<std::pair<int64_t, RankedTensorType>> sends;
  // Once per step: the parts of shared weights' gradients it sends to the
  // other holders (docs/pipeline.md).
  std::vector<std::pair<int64_t, RankedTensorType>> stepSends;
};

} // namespace

void mlir::tessel::printPipelineReport(ModuleOp module, raw_ostream &os) {
  std::map<int64_t, func::FuncOp> ranks;
  for (auto fn : module.getOps<func::FuncOp>())
    if (auto r = fn->getAttrOfType<IntegerAttr>(kPpRankAttr))
      ranks[r.getInt()] = fn;
  if (ranks.empty())
    return;
  std::map<int64_t, StageFigures> stages;
  for (auto &[r, fn] : ranks) {
    llvm::StringSet<> seen;
    fn.walk([&](Operation *op) {
      auto phase = op->getAttrOfType<StringAttr>(kPhaseAttr);
      if (!phase)
        return;
      StageFigures &s = stages[getPipelineInt(op, kStageAttr, 0)];
      s.rank = r;
      const int64_t mb = getPipelineInt(op, kMicrobatchAttr, -1);
      if (phase.getValue() == "SEND") {
        if (auto send = dyn_cast<SendOp>(op); send && (mb == 0 || mb == -1))
          (mb == 0 ? s.sends : s.stepSends)
              .emplace_back(send.getTarget(),
                            cast<RankedTensorType>(send.getInput().getType()));
        return;
      }
      if (phase.getValue() == "RECV")
        return;
      ++s.instructions;
      if (phase.getValue() == "F" && mb == 0) {
        ++s.forwardOps;
        s.forwardFlops += estimateFlops(op);
      }
      s.flops += estimateFlops(op);
      if (auto a = dyn_cast<AssignOp>(op))
        if (auto w = a.getWeight().getDefiningOp<WeightOp>();
            w && !w.getZeros() && seen.insert(w.getName()).second &&
            !w.getName().starts_with("optimizer.")) {
          s.params += w.getType().getNumElements();
          s.paramBytes += tensorBytes(w.getType());
        }
    });
  }
  auto mib = [](int64_t b) {
    return llvm::format("%.2f MiB", static_cast<double>(b) / (1 << 20));
  };
  os << "pipeline report (" << ranks.size() << " pp ranks, " << stages.size()
     << " stages; FLOPs and time for one step of every microbatch, time at "
     << llvm::format("%.0f", kNominalFlopsPerSecond / 1e9) << " GFLOP/s):\n";
  for (auto &[s, f] : stages) {
    os << "  stage " << s << " (pp rank " << f.rank << "): " << f.forwardOps
       << " forward ops ("
       << llvm::format("%.4g", f.forwardFlops)
       << " FLOPs) per microbatch, " << f.instructions
       << " instructions per step, " << f.params << " parameters ("
       << mib(f.paramBytes) << "), "
       << llvm::format("%.4g", f.flops) << " FLOPs, "
       << llvm::format("%.3f", f.flops / kNominalFlopsPerSecond * 1e3)
       << " ms\n";
    std::map<int64_t, std::pair<int64_t, int64_t>> byPeer; // tensors, bytes
    for (auto &[peer, t] : f.sends) {
      ++byPeer[peer].first;
      byPeer[peer].second += tensorBytes(t);
      os << "    sends to pp rank " << peer << ": " << t << " ("
         << tensorBytes(t) << " bytes) per microbatch\n";
    }
    for (auto &[peer, t] : f.stepSends)
      os << "    sends to pp rank " << peer << ": " << t << " ("
         << tensorBytes(t)
         << " bytes) per step, its part of a shared weight's gradient\n";
  }
  for (auto &[r, fn] : ranks) {
    Operation *loss = nullptr;
    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
    if (ret.getNumOperands() > 0)
      loss = ret.getOperand(0).getDefiningOp();
    MemoryPlan p = planMemory(fn, loss);
    os << "  pp rank " << r << " planned peak: " << p.peak() << " bytes ("
       << mib(p.peak()) << "): params " << p.params << ", optimizer state "
       << p.optimizerState << ", arena " << p.arena << "\n";
  }
}
