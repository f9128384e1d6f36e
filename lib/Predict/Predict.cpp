//===- Predict.cpp - a partitioned step's time and memory, predicted ------===//

#include "tessel/Predict/Predict.h"

#include "tessel/Export/MemoryReport.h"
#include "tessel/Export/OutputCollectives.h"
#include "tessel/Lifetimes/BufferLifetimes.h"
#include "tessel/OpTime/OpTime.h"

#include "dialects/tessel/OpCost.h"
#include "dialects/tessel/PipelineAttrs.h"
#include "dialects/tessel/TesselOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <map>
#include <tuple>

using namespace mlir;
using namespace mlir::tessel;
namespace cost = ::tessel::cost;

namespace {

/// The mesh's axes: size and rank stride (the first axis major).
struct MeshAxes {
  llvm::StringMap<std::pair<int64_t, int64_t>> axes; // name -> (size, stride)
  int64_t ranks = 1;

  explicit MeshAxes(ModuleOp module) {
    for (MeshOp mesh : module.getOps<MeshOp>()) {
      ranks = mesh.getNumDevices();
      int64_t stride = 1;
      for (auto [n, size] : llvm::reverse(
               llvm::zip(mesh.getAxisNames(), mesh.getAxisSizes()))) {
        axes[cast<StringAttr>(n).getValue()] = {size, stride};
        stride *= size;
      }
    }
  }
  /// The group a collective over `names` spans: its size, and the stride
  /// between consecutive members (the innermost axis's).
  std::pair<int64_t, int64_t> group(ArrayAttr names) const {
    int64_t size = 1, stride = ranks;
    for (Attribute a : names) {
      auto it = axes.find(cast<StringAttr>(a).getValue());
      if (it == axes.end())
        continue;
      size *= it->second.first;
      stride = std::min(stride, it->second.second);
    }
    return {size, std::max<int64_t>(stride, 1)};
  }
};

/// Which kind of collective `op` is, if it is one the cost model times.
std::optional<cost::Collective> collectiveOf(Operation *op) {
  static const std::pair<TypeID, cost::Collective> kinds[] = {
      {TypeID::get<AllReduceOp>(), cost::Collective::AllReduce},
      {TypeID::get<AllGatherOp>(), cost::Collective::AllGather},
      {TypeID::get<ReduceScatterOp>(), cost::Collective::ReduceScatter},
      {TypeID::get<AllToAllOp>(), cost::Collective::AllToAll},
      {TypeID::get<BroadcastOp>(), cost::Collective::Broadcast},
      {TypeID::get<CollectivePermuteOp>(), cost::Collective::SendRecv}};
  for (const auto &[id, kind] : kinds)
    if (op->getName().getTypeID() == id)
      return kind;
  return std::nullopt;
}

/// One rank program being played.
struct Player {
  func::FuncOp fn;
  int64_t ppRank = -1;
  std::vector<Operation *> ops;
  size_t pos = 0;
  double clock = 0, commFree = 0;
  /// Asynchronous collectives' results: when they are ready.
  llvm::DenseMap<Value, double> ready;
  RankPrediction figures;
  /// figures.byOp as it is summed: no string made per op.
  llvm::StringMap<std::pair<double, int64_t>> byOp;
};

} // namespace

namespace {

/// Seconds of a collective on `link` when `share` ranks share each device:
/// on a link the ranks' cores drive, they move the bytes share times
/// slower, and each sync point costs the link's measured shared_latency
/// (else its latency, share times).
double sharedCollectiveTime(cost::Collective kind, double bytes, int64_t ranks,
                            const cost::LinkSpec &link, double share) {
  if (!link.usesRankCores() || share <= 1.0)
    return cost::getCollectiveTime(kind, bytes, ranks, link);
  cost::LinkSpec shared = link;
  if (link.sharedLatency > 0)
    shared.latency = link.sharedLatency / share;
  return cost::getCollectiveTime(kind, bytes, ranks, shared) * share;
}

/// Plays one step of `module` with compute (and the communication the
/// ranks' cores drive) `share` times slower: the ranks that share a device.
llvm::Expected<Prediction> playStep(ModuleOp module,
                                    const cost::ClusterSpec &cluster,
                                    double share, bool planArenas) {
  MeshAxes mesh(module);
  Prediction out;
  out.ranks = mesh.ranks;
  out.oversubscription = share;
  const cost::DeviceSpec &device = cluster.device;

  std::vector<Player> players;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal() || fn.isPrivate())
      continue;
    Player p;
    p.fn = fn;
    if (auto r = fn->getAttrOfType<IntegerAttr>(kPpRankAttr))
      p.ppRank = r.getInt();
    for (Operation &op : fn.getBody().front())
      p.ops.push_back(&op);
    players.push_back(std::move(p));
  }
  if (players.empty())
    return llvm::createStringError("--predict: the module has no function "
                                   "to run");
  // A pipeline: only the pp ranks' functions run.
  if (llvm::any_of(players, [](const Player &p) { return p.ppRank >= 0; }))
    llvm::erase_if(players, [](const Player &p) { return p.ppRank < 0; });
  else if (players.size() > 1)
    players.resize(1); // the entry function: the first public one

  const int64_t ppStride =
      mesh.group(ArrayAttr::get(module.getContext(),
                                {StringAttr::get(module.getContext(),
                                                 kPipelineAxis)}))
          .second;
  const cost::LinkSpec &p2pLink = cluster.getGroupLink(2, ppStride);
  // (sender pp, receiver pp, tag) -> when the message is there.
  std::map<std::tuple<int64_t, int64_t, int64_t>, double> arrivals;
  // --explain's time per op name.
  auto tally = [](Player &p, StringRef name, double t) {
    auto &entry = p.byOp[name];
    entry.first += t;
    ++entry.second;
  };

  auto step = [&](Player &p) -> bool {
    Operation *op = p.ops[p.pos];
    // Wait for the asynchronous collectives it reads.
    for (Value v : op->getOperands())
      if (auto it = p.ready.find(v); it != p.ready.end()) {
        if (it->second > p.clock) {
          p.figures.communication += it->second - p.clock;
          p.clock = it->second;
        }
        p.ready.erase(it);
      }
    if (auto recv = dyn_cast<RecvOp>(op)) {
      auto it = arrivals.find({recv.getSource(), p.ppRank, recv.getTag()});
      if (it == arrivals.end())
        return false; // its send has not been played yet
      if (it->second > p.clock) {
        p.figures.idle += it->second - p.clock;
        p.clock = it->second;
      }
      arrivals.erase(it);
      ++p.pos;
      return true;
    }
    if (auto send = dyn_cast<SendOp>(op)) {
      // Copied and handed to the communication thread: the rank goes on.
      // On a link the cores drive, the rank's communication thread takes
      // it over (async_overhead) and moves it on the shared core.
      // Not shared_latency: the stages sharing a core are out of phase,
      // and a receiver waits while the other computes (processor sharing).
      double bytes = getValueBytes(send->getOperands());
      double t = p2pLink.getTransferTime(bytes);
      if (p2pLink.usesRankCores()) {
        t = (t + p2pLink.asyncOverhead) * out.oversubscription;
        p.clock += t;
        p.figures.communication += t;
      }
      arrivals[{p.ppRank, send.getTarget(), send.getTag()}] = p.clock + t;
      ++p.pos;
      return true;
    }
    if (auto kind = collectiveOf(op)) {
      auto axes = op->getAttrOfType<ArrayAttr>("axes");
      auto [size, stride] = mesh.group(axes);
      double bytes = isa<AllGatherOp>(op) ? getValueBytes(op->getResults())
                                          : getValueBytes(op->getOperands());
      const cost::LinkSpec &link = cluster.getGroupLink(size, stride);
      // Cores that move the bytes are shared like the compute.
      double t =
          sharedCollectiveTime(*kind, bytes, size, link, out.oversubscription);
      tally(p, op->getName().getStringRef(), t);
      // On shared memory the runtime runs them in place (a CPU rank of one
      // core: ExecutorOptions::overlap's auto): synchronous.
      const bool async = (op->hasAttr(TesselDialect::kBucketAttrName) ||
                          op->hasAttr(TesselDialect::kAsyncAttrName)) &&
                         link.kind != cost::LinkKind::SharedMemory;
      if (async && link.usesRankCores()) {
        // The communication thread moves the bytes on the rank's core (on
        // the clock); handing the collective over and waking the rank back
        // is latency (async_overhead): its result is ready that much later,
        // which a reader issued later does not see.
        p.clock += t;
        p.figures.communication += t;
        const double ready = p.clock + link.asyncOverhead * out.oversubscription;
        for (Value r : op->getResults())
          p.ready[r] = ready;
      } else if (async) {
        double start = std::max(p.clock, p.commFree);
        p.commFree = start + t;
        for (Value r : op->getResults())
          p.ready[r] = p.commFree;
      } else {
        p.clock += t;
        p.figures.communication += t;
      }
      ++p.pos;
      return true;
    }
    if (!isFreeAtRunTime(op)) {
      double t = getOpTime(op, device) * out.oversubscription;
      p.clock += t;
      p.figures.compute += t;
      tally(p, op->getName().getStringRef(), t);
      p.figures.flops += estimateFlops(op);
    }
    ++p.pos;
    return true;
  };

  for (;;) {
    bool progress = false, left = false;
    for (Player &p : players) {
      while (p.pos < p.ops.size() && step(p))
        progress = true;
      left |= p.pos < p.ops.size();
    }
    if (!left)
      break;
    if (!progress)
      return llvm::createStringError(
          "--predict: the pipeline ranks' receives wait for sends that never "
          "come (an invalid schedule)");
  }

  Operation *loss = lossOp(module);
  for (Player &p : players) {
    // Outstanding asynchronous work ends the step; then the collectives
    // that make the outputs whole (the loss's, a sharded logits').
    p.figures.communication += std::max(0.0, p.commFree - p.clock);
    p.clock = std::max(p.clock, p.commFree);
    for (const OutputCollective &c : getOutputCollectives(p.fn)) {
      SmallVector<Attribute> names;
      for (const std::string &a : c.axes)
        names.push_back(StringAttr::get(module.getContext(), a));
      auto [size, stride] =
          mesh.group(ArrayAttr::get(module.getContext(), names));
      double t = cost::getCollectiveTime(
          c.allReduce ? cost::Collective::AllReduce
                      : cost::Collective::AllGather,
          double(c.bytes) * (c.allReduce ? 1.0 : double(size)), size,
          cluster.getGroupLink(size, stride));
      p.clock += t;
      p.figures.communication += t;
      tally(p, c.allReduce ? "all_reduce (outputs)" : "all_gather (outputs)",
            t);
    }
    for (const auto &entry : p.byOp)
      p.figures.byOp[entry.getKey().str()] = entry.getValue();
    p.figures.ppRank = p.ppRank;
    p.figures.finish = p.clock;
    Operation *fnLoss = nullptr;
    if (p.ppRank < 0)
      fnLoss = loss;
    else if (auto ret = dyn_cast<func::ReturnOp>(
                 p.fn.getBody().front().getTerminator());
             ret && ret.getNumOperands() > 0)
      fnLoss = ret.getOperand(0).getDefiningOp();
    p.figures.peakBytes = planMemory(p.fn, fnLoss, planArenas).peak();
    out.programs.push_back(p.figures);
  }
  // The slowest program sets the step; every rank waits for it at the next
  // step's first collective, so its own idle tail is bubble too.
  for (auto [i, r] : llvm::enumerate(out.programs)) {
    if (r.finish > out.programs[out.slowest].finish)
      out.slowest = i;
    out.peakBytes = std::max(out.peakBytes, r.peakBytes);
  }
  const RankPrediction *slowest = &out.programs[out.slowest];
  out.peakIsLowerBound = !planArenas;
  out.stepTime = slowest->finish;
  out.compute = slowest->compute;
  out.communication = slowest->communication;
  // What the slowest program spent neither computing nor communicating
  // (rounding aside).
  out.bubble = std::max(0.0, out.stepTime - out.compute - out.communication);
  // Each program runs on ranks / programs ranks.
  double flops = 0;
  for (const RankPrediction &r : out.programs)
    flops += r.flops * double(out.ranks) / double(out.programs.size());
  out.achievedFlops = out.stepTime > 0 ? flops / out.stepTime : 0.0;
  return out;
}

} // namespace

llvm::Expected<Prediction>
mlir::tessel::predictStep(ModuleOp module, const cost::ClusterSpec &cluster,
                          bool planArenas) {
  if (llvm::Error e = cluster.validate())
    return std::move(e);
  const double over = std::max(
      1.0, double(MeshAxes(module).ranks) / double(cluster.getNumDevices()));
  if (over <= 1.0)
    return playStep(module, cluster, 1.0, planArenas);
  // Ranks that share a device slow each other only while they compute at
  // once. SPMD ranks run one program in lockstep: while one computes, so
  // do the others (over x). A pipeline's stages are out of phase, and a
  // stage waiting in its bubble leaves the device to the others: the step
  // played alone gives each stage's busy fraction (compute over its
  // finish), and the shared play slows compute by 1 + (over - 1) x their
  // mean (processor sharing). Measured on 4 ranks on 2 cores: the 4-layer
  // GPT-2's pp=4 ran 15.5-18.0 ms per step, predicted 21.5 at 2x, 17.3
  // shared.
  const bool pipeline = llvm::any_of(
      module.getOps<func::FuncOp>(),
      [](func::FuncOp fn) {
        return !fn.isExternal() && !fn.isPrivate() && fn->hasAttr(kPpRankAttr);
      });
  if (!pipeline)
    return playStep(module, cluster, over, planArenas);
  // Alone, only the busy fractions are read: no memory.
  llvm::Expected<Prediction> alone =
      playStep(module, cluster, 1.0, /*planArenas=*/false);
  if (!alone)
    return alone.takeError();
  double busy = 0;
  for (const RankPrediction &r : alone->programs)
    busy += r.finish > 0 ? std::min(1.0, r.compute / r.finish) : 1.0;
  busy /= double(alone->programs.size());
  return playStep(module, cluster, 1.0 + (over - 1.0) * busy, planArenas);
}

void mlir::tessel::printPrediction(const Prediction &p,
                                   const cost::ClusterSpec &cluster,
                                   llvm::raw_ostream &os, bool byOp) {
  auto ms = [](double s) { return llvm::format("%.3f ms", s * 1e3); };
  auto pct = [&](double s) {
    return llvm::format("%.1f%%", p.stepTime > 0 ? 100.0 * s / p.stepTime : 0);
  };
  auto mib = [](double b) { return llvm::format("%.2f MiB", b / (1 << 20)); };
  os << "predicted step: " << ms(p.stepTime) << " on " << p.ranks << " rank"
     << (p.ranks == 1 ? "" : "s") << " of cluster '" << cluster.name << "' ("
     << cluster.device.name;
  if (cluster.nodes > 1)
    os << ", " << cluster.nodes << " nodes of " << cluster.devicesPerNode;
  os << ")\n";
  os << "  compute " << ms(p.compute) << " (" << pct(p.compute)
     << "), exposed communication " << ms(p.communication) << " ("
     << pct(p.communication) << "), bubble " << ms(p.bubble) << " ("
     << pct(p.bubble) << ")\n";
  os << "  achieved " << llvm::format("%.3g", p.achievedFlops / 1e9)
     << " GFLOP/s over all ranks ("
     << llvm::format("%.3g", p.achievedFlops / 1e9 / double(p.ranks))
     << " per rank)\n";
  if (p.oversubscription > 1)
    os << "  " << p.ranks << " ranks share " << cluster.getNumDevices()
       << (cluster.getNumDevices() == 1 ? " device" : " devices")
       << ": compute " << llvm::format("%.2f", p.oversubscription)
       << "x slower\n";
  os << "  peak memory per rank: " << mib(double(p.peakBytes)) << " of "
     << mib(cluster.device.memoryBytes)
     << (double(p.peakBytes) > cluster.device.memoryBytes ? " (does NOT fit)"
                                                           : "")
     << "\n";
  if (byOp) {
    const RankPrediction &slowest = p.programs[p.slowest];
    std::vector<std::pair<std::string, std::pair<double, int64_t>>> ops(
        slowest.byOp.begin(), slowest.byOp.end());
    llvm::stable_sort(ops, [](const auto &a, const auto &b) {
      return a.second.first > b.second.first;
    });
    os << "  by op (the slowest program; collectives' own time, "
          "overlapped or not):\n";
    for (const auto &[name, figure] : ops)
      os << llvm::format("    %-28s %10.3f ms %6lld\n", name.c_str(),
                         figure.first * 1e3, (long long)figure.second);
  }
  if (p.programs.size() > 1)
    for (const RankPrediction &r : p.programs)
      os << "  pp rank " << r.ppRank << ": compute " << ms(r.compute)
         << ", communication " << ms(r.communication) << ", waiting "
         << ms(r.idle) << ", done at " << ms(r.finish) << ", peak "
         << mib(double(r.peakBytes)) << "\n";
}
