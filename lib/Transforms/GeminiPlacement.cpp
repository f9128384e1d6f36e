//===- GeminiPlacement.cpp - Gemini: chunks between device and host -------===//
//
// tesselc --plugin gemini --device-memory-limit (docs/plugins.md#gemini).
// After -tessel-gemini-chunks, on the step in its final op order, a
// compile-time planner decides where each chunk lives:
//
//   device: its parameters and optimizer state stay in device memory for
//           the whole step; nothing moves.
//   host:   they stay in host memory; before each run of its readers that
//           neither another chunk's reader nor the loss interrupts (its
//           use in the forward, again in the backward; per microbatch with
//           several) a
//           tessel.chunk_fetch copies the parameters into device memory
//           (the arena), the run reads the copy, and the copy dies after
//           its last reader (the eviction: the host copy is authoritative,
//           nothing is copied back). The update runs on the host copy, as
//           Gemini's CPU optimizer does.
//
// Device memory is the resident chunks' bytes plus the arena, which the
// planner computes as the exporter will: the step's buffer lifetimes by the
// rules that --report's memory plan uses (tessel/Lifetimes), with a hook
// that adds the fetches of the plan at hand, and the same buffer planner. Every chunk
// starts in host memory; chunks become resident in order of first use
// while the total stays within the limit; then two stays of a host chunk
// merge into one (fewer moves) where that fits, the shortest gaps first;
// then each fetch moves ahead to the first reader of the host stay before
// it (prefetch) where that fits too.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselOps.h"
#include "tessel/Lifetimes/BufferLifetimes.h"
#include "tessel/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"

#include <limits>
#include <map>

namespace mlir::tessel {
#define GEN_PASS_DEF_GEMINIPLACEMENTPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

/// What a plan adds to the step, for its buffer lifetimes before the
/// fetches are in the IR: its fetches, each before an instruction, with the
/// bytes of each copy and the copy's last reader (-1: none); and, for each
/// parameter of a host chunk, the instructions its fetches precede (in the
/// placed step the weight's readers are those fetches, its update and its
/// assign: the others read the copies).
struct Moves : LifetimeHook {
  std::map<int64_t, SmallVector<Inserted>> before;
  DenseMap<Operation *, SmallVector<int64_t>> weightFetches;

  void insertedBefore(int64_t at,
                      SmallVectorImpl<Inserted> &out) const override {
    if (auto it = before.find(at); it != before.end())
      out.append(it->second.begin(), it->second.end());
  }
  bool readsWeight(Operation *weight, Operation *user) const override {
    return !weightFetches.count(weight) ||
           isa<AdamUpdateOp, SgdUpdateOp, AssignOp, func::ReturnOp>(user);
  }
  void weightReadsBefore(Operation *weight,
                         SmallVectorImpl<int64_t> &at) const override {
    if (auto it = weightFetches.find(weight); it != weightFetches.end())
      at.append(it->second.begin(), it->second.end());
  }
};

/// The arena the exporter will plan for the step `block` with `moves`.
int64_t arenaOf(Block &block, const Moves &moves) {
  return planArena(stepLifetimes(block, &moves).buffers);
}

/// A chunk's parameters (and its optimizer state's bytes).
struct Chunk {
  SmallVector<WeightOp> params;
  int64_t bytes = 0, stateBytes = 0;
  bool resident = false;
};

/// A host chunk's stay in device memory: fetched before the op at `fetch`,
/// read from `first` to `last`.
struct Window {
  int64_t chunk, fetch, first, last;
  /// Merged into the chunk's stay before it.
  bool merged = false;
};

struct GeminiPlacementPass
    : impl::GeminiPlacementPassBase<GeminiPlacementPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (deviceMemoryLimit < 0) {
      module.emitError() << "tessel-gemini-placement: device-memory-limit "
                            "must be >= 0 (got "
                         << int64_t(deviceMemoryLimit) << ")";
      return signalPassFailure();
    }
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal() && fn.getBody().hasOneBlock())
        if (failed(place(module, fn)))
          return signalPassFailure();
  }

  LogicalResult place(ModuleOp module, func::FuncOp fn) {
    Block &block = fn.getBody().front();
    // The chunks, from -tessel-gemini-chunks' marks; their parameters move
    // to the top of the step, so a fetch anywhere sees them.
    std::map<int64_t, Chunk> byIndex;
    Operation *top = &block.front();
    for (auto w : llvm::make_early_inc_range(block.getOps<WeightOp>())) {
      auto c = w->getAttrOfType<IntegerAttr>(TesselDialect::kChunkAttrName);
      if (!c)
        continue;
      Chunk &chunk = byIndex[c.getInt()];
      if (w.getZeros()) {
        chunk.stateBytes += tensorBytes(w.getType());
        continue;
      }
      chunk.params.push_back(w);
      chunk.bytes += tensorBytes(w.getType());
      if (w != top)
        w->moveBefore(top);
    }
    if (byIndex.empty())
      return success();
    std::vector<Chunk> chunks;
    for (auto &[i, c] : byIndex) {
      if (i != static_cast<int64_t>(chunks.size()))
        return fn.emitError()
               << "gemini: chunk " << chunks.size() << " has no parameter";
      chunks.push_back(std::move(c));
    }

    DenseMap<Operation *, int64_t> pos;
    std::vector<Operation *> order;
    for (Operation &op : block) {
      pos[&op] = static_cast<int64_t>(order.size());
      order.push_back(&op);
    }
    const int64_t n = static_cast<int64_t>(order.size());
    // Each chunk's readers (the updates and assigns excepted: they run
    // where the chunk lives), in program order.
    std::vector<std::vector<int64_t>> readers(chunks.size());
    DenseMap<Operation *, SmallVector<int64_t>> paramReaders;
    std::vector<std::pair<int64_t, int64_t>> events; // (instruction, chunk)
    for (auto [ci, c] : llvm::enumerate(chunks)) {
      for (WeightOp w : c.params) {
        SmallVector<int64_t> &mine = paramReaders[w];
        for (Operation *user : w->getUsers()) {
          if (isa<AdamUpdateOp, SgdUpdateOp, AssignOp>(user))
            continue;
          mine.push_back(pos.lookup(block.findAncestorOpInBlock(*user)));
        }
        llvm::sort(mine);
        readers[ci].insert(readers[ci].end(), mine.begin(), mine.end());
      }
      llvm::sort(readers[ci]);
      readers[ci].erase(llvm::unique(readers[ci]), readers[ci].end());
      for (int64_t at : readers[ci])
        events.push_back({at, static_cast<int64_t>(ci)});
    }
    llvm::sort(events);
    // Its stays in device memory when it lives in host memory: a run of
    // readers that no other chunk's reader interrupts, nor the loss (the
    // chunk's use in the forward, again in the backward; per microbatch
    // with several).
    Operation *lossDef = lossOf(fn);
    const int64_t loss = lossDef ? pos.lookup(lossDef) : -1;
    std::vector<Window> windows;
    for (auto [ci, r] : llvm::enumerate(readers)) {
      const int64_t c = static_cast<int64_t>(ci);
      for (size_t i = 0; i < r.size(); ++i) {
        bool interrupted = false;
        if (i > 0)
          for (auto it = llvm::upper_bound(
                   events, std::make_pair(r[i - 1],
                                          std::numeric_limits<int64_t>::max()));
               it != events.end() && it->first < r[i]; ++it)
            interrupted |= it->second != c;
        if (i > 0 && r[i - 1] <= loss && loss < r[i])
          interrupted = true;
        if (i == 0 || interrupted)
          windows.push_back({c, r[i], r[i], r[i]});
        else
          windows.back().last = r[i];
      }
    }

    // Device memory of a plan: the resident chunks plus the arena of the
    // step with the host chunks' fetches (one copy per parameter).
    auto movesOf = [&]() {
      Moves m;
      for (const Window &w : windows)
        if (!chunks[w.chunk].resident && !w.merged)
          for (WeightOp p : chunks[w.chunk].params) {
            // Each copy dies after its own last reader in the stay (one
            // that no reader reads dies at once).
            int64_t last = -1;
            for (int64_t r : paramReaders.lookup(p))
              if (r >= w.first && r <= w.last)
                last = r;
            m.before[w.fetch].push_back({tensorBytes(p.getType()), last});
            m.weightFetches[p].push_back(w.fetch);
          }
      return m;
    };
    auto deviceBytes = [&](int64_t *arenaOut = nullptr) {
      int64_t resident = 0;
      for (const Chunk &c : chunks)
        if (c.resident)
          resident += c.bytes + c.stateBytes;
      int64_t arena = arenaOf(block, movesOf());
      if (arenaOut)
        *arenaOut = arena;
      return resident + arena;
    };

    const int64_t limit = deviceMemoryLimit;
    if (limit == 0) {
      for (Chunk &c : chunks)
        c.resident = true;
    } else {
      // A chunk must fit whole while it is read.
      for (auto [ci, c] : llvm::enumerate(chunks))
        if (c.bytes > limit) {
          InFlightDiagnostic d = c.params.front().emitError()
                                 << "gemini: chunk " << ci << " ("
                                 << c.params.size() << " parameter"
                                 << (c.params.size() == 1 ? "" : "s") << ": "
                                 << namesOf(c) << ") holds " << c.bytes
                                 << " bytes on this rank, more than the "
                                    "device memory limit of "
                                 << limit
                                 << " bytes (a chunk is fetched whole: give a "
                                    "larger limit or smaller chunks)";
          return d;
        }
      if (int64_t need = deviceBytes(); need > limit)
        return tooSmall(fn, chunks, windows, stepLifetimes(block).buffers,
                        order, n, need, limit);
      // Resident chunks, in order of first use, while they fit.
      for (Chunk &c : chunks) {
        c.resident = true;
        if (deviceBytes() > limit)
          c.resident = false;
      }
      // Fewer moves: two stays of a chunk become one (it stays in device
      // memory in between) where that fits, the shortest gaps first. A
      // merge only adds memory, so one that does not fit never will: one
      // pass.
      SmallVector<std::pair<int64_t, size_t>> gaps; // (gap, window)
      for (size_t i = 0; i + 1 < windows.size(); ++i)
        if (windows[i].chunk == windows[i + 1].chunk &&
            !chunks[windows[i].chunk].resident)
          gaps.push_back({windows[i + 1].first - windows[i].last, i});
      llvm::sort(gaps);
      for (auto [gap, i] : gaps) {
        size_t left = i;
        while (windows[left].merged)
          --left;
        const int64_t keep = windows[left].last;
        windows[left].last = windows[i + 1].last;
        windows[i + 1].merged = true;
        if (deviceBytes() > limit) {
          windows[left].last = keep;
          windows[i + 1].merged = false;
        }
      }
      // Prefetch: each host chunk's fetch one stay ahead, at the first
      // reader of the host stay before it (after the chunk's own previous
      // stay), where that fits.
      SmallVector<size_t> host;
      for (auto [i, w] : llvm::enumerate(windows))
        if (!chunks[w.chunk].resident && !w.merged)
          host.push_back(i);
      llvm::stable_sort(host, [&](size_t a, size_t b) {
        return windows[a].first < windows[b].first;
      });
      for (size_t k = 1; k < host.size(); ++k) {
        Window &w = windows[host[k]];
        const Window &prev = windows[host[k - 1]];
        int64_t own = -1;
        for (const Window &o : windows)
          if (o.chunk == w.chunk && !o.merged && o.last < w.first)
            own = std::max(own, o.last);
        if (prev.first >= w.first || prev.first <= own)
          continue;
        int64_t keep = w.fetch;
        w.fetch = prev.first;
        if (deviceBytes() > limit)
          w.fetch = keep;
      }
    }
    int64_t arena = 0;
    const int64_t resident = deviceBytes(&arena) - arena;

    // The fetches, and the readers of each stay read the copies.
    for (const Window &w : windows) {
      const Chunk &c = chunks[w.chunk];
      if (c.resident || w.merged)
        continue;
      OpBuilder b(order[w.fetch]);
      SmallVector<Value> params;
      SmallVector<Type> types;
      for (WeightOp p : c.params) {
        params.push_back(p);
        types.push_back(p.getType());
      }
      auto fetch = ChunkFetchOp::create(b, order[w.fetch]->getLoc(), types,
                                        params, w.chunk);
      for (auto [i, copy] : llvm::enumerate(fetch.getResults()))
        params[i].replaceUsesWithIf(copy, [&](OpOperand &use) {
          Operation *top = block.findAncestorOpInBlock(*use.getOwner());
          if (!top || !pos.count(top) ||
              isa<AdamUpdateOp, SgdUpdateOp, AssignOp>(top))
            return false;
          int64_t at = pos.lookup(top);
          return at >= w.first && at <= w.last;
        });
    }

    // What the placed step needs, by the same rules over its own order
    // (the planner's model of it above is exact; --report checks again).
    arena = planArena(stepLifetimes(block).buffers);
    // The plan, for --report.
    Builder b(module.getContext());
    SmallVector<Attribute> placement;
    for (const Chunk &c : chunks)
      placement.push_back(b.getStringAttr(c.resident ? "device" : "host"));
    module->setAttr(
        TesselDialect::kGeminiPlanAttrName,
        b.getDictionaryAttr({
            b.getNamedAttr("limit", b.getI64IntegerAttr(limit)),
            b.getNamedAttr("resident", b.getI64IntegerAttr(resident)),
            b.getNamedAttr("arena", b.getI64IntegerAttr(arena)),
            b.getNamedAttr("peak", b.getI64IntegerAttr(resident + arena)),
            b.getNamedAttr("placement", b.getArrayAttr(placement)),
        }));
    return success();
  }

  static std::string namesOf(const Chunk &c) {
    std::string s;
    for (auto [i, w] : llvm::enumerate(c.params)) {
      if (i == 3) {
        s += ", ... " + std::to_string(c.params.size() - 3) + " more";
        break;
      }
      s += (i ? ", '" : "'") + WeightOp(w).getName().str() + "'";
    }
    return s;
  }

  /// Every chunk in host memory, fetched right before its use, and still
  /// above the limit: the error names the fullest op and what is live there.
  LogicalResult
  tooSmall(func::FuncOp fn, const std::vector<Chunk> &chunks,
           const std::vector<Window> &windows,
           const std::vector<::tessel::runtime::BufferLifetime> &base,
           const std::vector<Operation *> &order, int64_t n, int64_t need,
           int64_t limit) {
    // Live bytes at each op, each buffer rounded up to the arena's 64-byte
    // alignment.
    auto aligned = [](int64_t bytes) { return (bytes + 63) / 64 * 64; };
    std::vector<int64_t> act(n + 2, 0), fetched(n + 2, 0);
    for (const auto &b : base)
      for (int64_t i = std::max<int64_t>(
               StepLifetimes::instructionAt(b.firstUse), 0);
           i <= std::min(StepLifetimes::instructionAt(b.lastUse), n - 1); ++i)
        act[i] += aligned(static_cast<int64_t>(b.size));
    for (const Window &w : windows)
      for (int64_t i = w.fetch; i <= w.last; ++i)
        for (WeightOp p : chunks[w.chunk].params)
          fetched[i] += aligned(tensorBytes(p.getType()));
    int64_t at = 0;
    for (int64_t i = 0; i < n; ++i)
      if (act[i] + fetched[i] > act[at] + fetched[at])
        at = i;
    std::string which;
    for (const Window &w : windows)
      if (w.fetch <= at && at <= w.last)
        which += (which.empty() ? "" : ", ") + std::to_string(w.chunk);
    std::string what = order[at]->getName().getStringRef().str();
    if (auto name = dyn_cast<NameLoc>(order[at]->getLoc()))
      what += " '" + name.getName().str() + "'";
    return fn.emitError()
           << "gemini: with every chunk in host memory the step still needs "
           << need << " bytes of device memory (its arena), more than the "
           << "device memory limit of " << limit << " bytes: at " << what
           << " (instruction " << at << ") " << act[at]
           << " bytes of activations and " << fetched[at]
           << " bytes of fetched chunks ("
           << (which.empty() ? std::string("none") : which)
           << ") are live at once";
  }
};

} // namespace
} // namespace mlir::tessel
