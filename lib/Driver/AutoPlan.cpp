//===- AutoPlan.cpp - --plan=auto: the fastest plan that fits -------------===//
//
// Enumerates the configurations a training step can take on --devices N:
// every mesh dp x tp x pp = N, ZeRO 0, 2 or 3 over dp, microbatches for a
// pipeline (p, 2p, 4p, and the powers of two below p), activation
// recomputation where memory needs it; each is compiled to its partitioned
// program by the driver itself (the hybrid plugin's options: Megatron's tp,
// --stages auto's cut) and predicted by TesselPredict on --cluster. The
// fastest that fits --memory-per-device (or the device's memory) is compiled
// as asked. docs/auto-plan.md.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "tessel/Cost/ClusterFile.h"
#include "tessel/Driver/AutoPlanSearch.h"
#include "tessel/Driver/BoosterPlugins.h"
#include "tessel/Predict/ExpandPipeline.h"
#include "tessel/Predict/Predict.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <thread>

using namespace llvm;

namespace tessel::driver {

Expected<cost::ClusterSpec> loadCluster(StringRef name, int64_t ranks) {
  if (auto c = cost::getBuiltinCluster(name)) {
    if (name != "cpu" && ranks > c->devicesPerNode)
      c->nodes = (ranks + c->devicesPerNode - 1) / c->devicesPerNode;
    return *c;
  }
  if (name.ends_with(".yaml") || name.ends_with(".yml") || name.contains('/'))
    return cost::loadClusterFile(name);
  return createStringError("--cluster '" + name +
                           "': neither a built-in cluster (" +
                           join(cost::getBuiltinClusterNames(), ", ") +
                           ") nor a .yaml cluster file");
}

namespace {

struct Candidate {
  int64_t dp = 1, tp = 1, pp = 1;
  int zero = 0;
  int microbatches = 1;
  bool recompute = false;
  /// Its recomputed variant is among the candidates already.
  bool hasVariant = false;
  std::optional<mlir::tessel::Prediction> prediction;
  /// Why it has no prediction (the compile's first error line).
  std::string failure;

  std::string label() const {
    std::string s = "dp=" + std::to_string(dp) + " tp=" + std::to_string(tp) +
                    " pp=" + std::to_string(pp);
    if (dp > 1)
      s += zero ? " zero" + std::to_string(zero) : " ddp";
    if (pp > 1)
      s += " mb=" + std::to_string(microbatches);
    if (recompute)
      s += " recompute";
    return s;
  }
  std::string plugin() const {
    std::string s = "hybrid:dp=" + std::to_string(dp) +
                    ",tp=" + std::to_string(tp) + ",pp=" + std::to_string(pp) +
                    ",zero=" + std::to_string(zero);
    if (pp > 1)
      s += ",microbatches=" + std::to_string(microbatches);
    return s;
  }
};

/// The microbatch counts tried for a pipeline of `pp` stages: p, 2p and 4p
/// (a 1F1B step's bubble is (p - 1) / (m + p - 1) of it), and the powers of
/// two from 2 below p, for a batch too small to split p ways (a batch of 2
/// on pp=4 still pipelines two microbatches, and on a CPU a tiny model's
/// stages may win over its tensor-parallel collectives). Counts the batch
/// does not divide fail to compile and are listed as such.
std::vector<int> microbatchCounts(int64_t pp) {
  if (pp <= 1)
    return {1};
  std::vector<int> counts;
  for (int64_t m = 2; m < pp; m *= 2)
    counts.push_back(int(m));
  for (int64_t k : {1, 2, 4})
    counts.push_back(int(k * pp));
  return counts;
}

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i <= n; ++i)
    if (n % i == 0)
      d.push_back(i);
  return d;
}

std::string firstLine(Error err) {
  std::string text = toString(std::move(err));
  StringRef line = StringRef(text).trim();
  line = line.take_until([](char c) { return c == '\n'; });
  line.consume_front("tesselc: error: ");
  return line.str();
}

std::string ms(double s) {
  std::string out;
  raw_string_ostream(out) << format("%.3f ms", s * 1e3);
  return out;
}

std::string mib(double b) {
  std::string out;
  raw_string_ostream(out) << format("%.2f MiB", b / (1 << 20));
  return out;
}

/// Why `winner` beats `next`: the component of the step where it saves the
/// most.
std::string whyWon(const Candidate &winner, const Candidate &next) {
  const auto &w = *winner.prediction, &n = *next.prediction;
  struct Part {
    const char *name;
    double saved;
  } parts[] = {{"compute", n.compute - w.compute},
               {"exposed communication", n.communication - w.communication},
               {"pipeline bubble", n.bubble - w.bubble}};
  const Part *best = &parts[0];
  for (const Part &p : parts)
    if (p.saved > best->saved)
      best = &p;
  std::string out;
  raw_string_ostream os(out);
  os << format("%.1f%%", 100.0 * (n.stepTime - w.stepTime) / w.stepTime)
     << " faster than the next, " << next.label() << ": " << best->name
     << " " << ms(best->saved) << " less";
  return out;
}

} // namespace

Expected<AutoPlanResult> chooseAutoPlan(const CompileOptions &options) {
  auto started = std::chrono::steady_clock::now();
  if (!options.train)
    return fail("--plan=auto chooses a training step's configuration: add "
                "--train");
  if (options.devices < 1)
    return fail("--plan=auto needs --devices N (how many ranks to plan for)");
  for (auto [given, flag] :
       {std::pair<bool, const char *>{!options.mesh.empty(), "--mesh"},
        {!options.plugin.empty(), "--plugin"},
        {options.stages.has_value(), "--stages"},
        {options.microbatches.has_value(), "--microbatches"},
        {options.recompute, "--recompute"}})
    if (given)
      return fail(Twine("--plan=auto chooses ") + flag +
                  " itself: leave it out, or give a plan");
  Expected<cost::ClusterSpec> cluster =
      loadCluster(options.cluster, options.devices);
  if (!cluster)
    return fail(toString(cluster.takeError()));
  double limit = cluster->device.memoryBytes;
  if (!options.memoryPerDevice.empty()) {
    std::optional<int64_t> bytes = parseByteSize(options.memoryPerDevice);
    if (!bytes || *bytes <= 0)
      return fail("--memory-per-device '" + options.memoryPerDevice +
                  "': not a size (e.g. 80GiB, 512MiB, 1e9)");
    limit = double(*bytes);
  }

  // Each worker thread has its own context, with the model loaded into it
  // once: its candidates compile copies of that module.
  struct Worker {
    std::unique_ptr<mlir::MLIRContext> context;
    mlir::OwningOpRef<mlir::ModuleOp> model;
  };
  auto loadWorker = [&]() -> Expected<Worker> {
    Worker w;
    w.context = createContext();
    CompileOptions o = options;
    o.plan = "";
    o.planExhaustive = false;
    o.train = false;
    o.emit = Emit::Mlir;
    o.output = "";
    o.printText = false;
    o.predict = o.report = o.explain = false;
    Expected<CompileResult> r = compile(*w.context, o, [](const Message &) {});
    if (!r)
      return r.takeError();
    w.model = std::move(r->module);
    return std::move(w);
  };
  std::vector<Worker> workers;
  {
    Expected<Worker> first = loadWorker();
    if (!first)
      return first.takeError();
    workers.push_back(std::move(*first));
  }
  // The batch: dim 0 of the step's inputs (what the microbatches and dp
  // split), read once from the imported model.
  int64_t batch = 0;
  {
    for (auto fn : (*workers.front().model).getOps<mlir::func::FuncOp>()) {
      if (fn.isExternal() || fn.getNumArguments() == 0)
        continue;
      auto t = dyn_cast<mlir::RankedTensorType>(fn.getArgumentTypes()[0]);
      if (t && t.getRank() > 0 && !t.isDynamicDim(0))
        batch = t.getDimSize(0);
      break;
    }
  }

  // Megatron's rule: tensor parallelism stays within a node, where its
  // per-layer all-reduces run over NVLink. On the cpu cluster (ranks on
  // cores of one machine) any tp is offered.
  const int64_t maxTp = cluster->name == "cpu" || cluster->devicesPerNode < 1
                            ? options.devices
                            : cluster->devicesPerNode;
  // A pipeline's microbatch counts; where the batch splits into none of
  // them (a batch of 1), one microbatch: the stages then run in turn, for
  // a model whose weights no other layout fits.
  auto countsFor = [&](int64_t pp, int64_t dp) {
    std::vector<int> counts = microbatchCounts(pp);
    if (pp > 1 && batch > 0 && batch >= dp &&
        llvm::none_of(counts, [&](int m) {
          return batch % m == 0 && batch / m >= dp;
        }))
      counts.insert(counts.begin(), 1);
    return counts;
  };
  std::deque<Candidate> candidates;
  std::vector<std::string> notOffered;
  const int64_t n = options.devices;
  for (int64_t pp : divisors(n))
    for (int64_t tp : divisors(n / pp)) {
      const int64_t dp = n / pp / tp;
      if (tp > maxTp) {
        notOffered.push_back("tp=" + std::to_string(tp) + " (pp=" +
                             std::to_string(pp) + "): spans nodes of " +
                             std::to_string(cluster->devicesPerNode));
        continue;
      }
      for (int zero : dp > 1 ? std::vector<int>{0, 2, 3} : std::vector<int>{0})
        for (int mb : countsFor(pp, dp)) {
          // Microbatches split the batch, then dp each microbatch: a
          // count the batch does not divide, or whose microbatches have
          // fewer rows than dp, compiles to no such step.
          if (batch > 0 && (batch % mb != 0 || batch / mb < dp)) {
            if (zero == 0)
              notOffered.push_back(
                  "dp=" + std::to_string(dp) + " tp=" + std::to_string(tp) +
                  " pp=" + std::to_string(pp) +
                  (pp > 1 ? " mb=" + std::to_string(mb) : "") +
                  ": a batch of " + std::to_string(batch) +
                  (mb > 1 ? " has no " + std::to_string(mb) +
                                " microbatches for dp=" + std::to_string(dp) +
                                " to split"
                          : " has fewer rows than dp=" + std::to_string(dp)));
            continue;
          }
          Candidate c;
          c.dp = dp, c.tp = tp, c.pp = pp, c.zero = zero, c.microbatches = mb;
          candidates.push_back(c);
        }
    }
  if (candidates.empty())
    return fail("--plan=auto: no configuration of " + Twine(n) +
                " devices splits a batch of " + Twine(batch) +
                " (export the model at the global batch)");

  // A candidate's prediction: compiled from the worker's copy of the model
  // (no verifier between passes, no text), its pipeline expanded, its step
  // played. `exact`: the memory laid out as the exporter will; otherwise
  // the live bytes at the peak, a lower bound (Prediction::peakIsLowerBound).
  auto predict = [&](Worker &w, Candidate &c, bool exact) {
    c.prediction.reset();
    c.failure.clear();
    CompileOptions o = options;
    o.plan = "";
    o.planExhaustive = false;
    o.plugin = c.plugin();
    o.recompute = c.recompute;
    o.emit = Emit::Partitioned;
    o.output = "";
    o.predict = o.report = o.explain = false;
    o.timelines.clear();
    o.verifyPasses = false;
    o.predictExpand = true;
    o.printText = false;
    Expected<CompileResult> r =
        compile(*w.context, o, [](const Message &) {}, *w.model);
    if (!r) {
      c.failure = firstLine(r.takeError());
      return;
    }
    // A dp axis the batch has fewer rows than is no data parallelism: the
    // built-in plans leave such a batch whole on every dp rank, a candidate
    // auto does not offer.
    if (!r->wholeBatches.empty()) {
      c.failure = "dp=" + std::to_string(c.dp) +
                  " splits no batch: " + r->wholeBatches.front();
      return;
    }
    mlir::OwningOpRef<mlir::ModuleOp> expanded;
    if (r->expandToMicrobatches) {
      auto e =
          mlir::tessel::expandPipeline(*r->module, r->expandToMicrobatches);
      if (!e) {
        c.failure = firstLine(e.takeError());
        return;
      }
      expanded = std::move(*e);
    }
    Expected<mlir::tessel::Prediction> p = mlir::tessel::predictStep(
        expanded ? *expanded : *r->module, *cluster, exact);
    if (!p) {
      c.failure = firstLine(p.takeError());
      return;
    }
    c.prediction = std::move(*p);
  };
  // Candidates compile independently: one worker per thread, as many as
  // cores (--plan-threads), each taking the next candidate. A worker
  // loads the model on its own thread, the first time it is needed.
  const unsigned threads = std::max(
      1u, options.autoThreads > 0 ? unsigned(options.autoThreads)
                                  : std::thread::hardware_concurrency());
  auto predictAll = [&](const std::vector<Candidate *> &list, bool exact) {
    std::atomic<size_t> next{0};
    auto work = [&](Worker *w) {
      for (size_t i; (i = next++) < list.size();)
        predict(*w, *list[i], exact);
    };
    const size_t n = std::min<size_t>(threads, list.size());
    std::vector<std::thread> pool;
    workers.resize(std::max(workers.size(), n));
    for (size_t t = 1; t < n; ++t)
      pool.emplace_back([&, t] {
        if (!workers[t].context) {
          Expected<Worker> w = loadWorker();
          if (!w) {
            // The first worker loaded the same model: this is not the
            // model's fault (out of memory, say); the others take this
            // one's candidates.
            consumeError(w.takeError());
            return;
          }
          workers[t] = std::move(*w);
        }
        work(&workers[t]);
      });
    work(&workers.front());
    for (std::thread &t : pool)
      t.join();
  };
  auto pointers = [](std::deque<Candidate> &list) {
    std::vector<Candidate *> out;
    for (Candidate &c : list)
      out.push_back(&c);
    return out;
  };
  auto peak = [](const Candidate *c) {
    return double(c->prediction->peakBytes);
  };

  // The search (docs/auto-plan.md, "Cost of the search"). Every candidate's
  // step, with the live bytes at its peak: a lower bound of its memory,
  // without the buffer planner's search (--plan-exhaustive: laid out).
  const bool exhaustive = options.planExhaustive;
  predictAll(pointers(candidates), /*exact=*/exhaustive);
  // What surely does not fit may with its activations recomputed (not in a
  // pipeline, which does not recompute yet).
  std::deque<Candidate> recomputed;
  auto recomputeOf = [](const Candidate &c) {
    Candidate r = c;
    r.recompute = true;
    r.prediction.reset();
    return r;
  };
  for (Candidate &c : candidates)
    if (c.prediction && c.pp == 1 && peak(&c) > limit) {
      recomputed.push_back(recomputeOf(c));
      c.hasVariant = true;
    }
  predictAll(pointers(recomputed), /*exact=*/exhaustive);
  candidates.insert(candidates.end(), recomputed.begin(), recomputed.end());

  // Then the memory of those that may win, laid out fastest first, one
  // per worker at a time (AutoPlanSearch.h), until the winner and the
  // runner-up fit (with --explain, the best eight).
  auto searched = [](const Candidate &c) {
    SearchCandidate s;
    if (c.prediction) {
      s.stepTime = c.prediction->stepTime;
      s.peak = double(c.prediction->peakBytes);
      s.laidOut = !c.prediction->peakIsLowerBound;
    }
    s.recomputable = c.pp == 1 && !c.recompute && !c.hasVariant;
    return s;
  };
  std::deque<SearchCandidate> view;
  for (const Candidate &c : candidates)
    view.push_back(searched(c));
  auto layOut = [&](ArrayRef<size_t> ids) {
    std::vector<Candidate *> list;
    for (size_t i : ids)
      list.push_back(&candidates[i]);
    predictAll(list, /*exact=*/true);
    for (size_t i : ids)
      view[i] = searched(candidates[i]);
  };
  auto addRecomputed = [&](size_t id) {
    candidates[id].hasVariant = true;
    candidates.push_back(recomputeOf(candidates[id]));
    predict(workers.front(), candidates.back(), /*exact=*/true);
    view.push_back(searched(candidates.back()));
    return view.size() - 1;
  };
  const SearchResult search = searchBestFirst(
      view, limit, exhaustive ? SIZE_MAX : options.explain ? 8 : 2, threads,
      SearchCallbacks{layOut, addRecomputed});
  std::vector<const Candidate *> fits;
  std::vector<Candidate *> tooBig;
  for (size_t i : search.fits)
    fits.push_back(&candidates[i]);
  for (size_t i : search.tooBig)
    tooBig.push_back(&candidates[i]);
  const size_t unweighed = search.unweighed;
  size_t failed = 0;
  for (const Candidate &c : candidates)
    if (!c.prediction)
      ++failed;
  auto weighed = [](const Candidate *c) {
    return !c->prediction->peakIsLowerBound;
  };
  if (fits.empty()) {
    if (!tooBig.empty()) {
      // The least need: that of the candidate whose bound is least, laid
      // out.
      Candidate *least = *std::min_element(
          tooBig.begin(), tooBig.end(),
          [&](const Candidate *a, const Candidate *b) {
            return peak(a) < peak(b);
          });
      if (!weighed(least))
        predict(workers.front(), *least, /*exact=*/true);
      if (least->prediction)
        return fail("--plan=auto: no configuration on " + Twine(n) +
                    " devices fits " + mib(limit) + " per device; the "
                    "smallest need found is " +
                    mib(peak(least)) + " per rank, for " + least->label());
    }
    // divisors(n) holds 1: there is at least the all-dp candidate.
    return fail("--plan=auto: no configuration of the model compiles on " +
                Twine(n) + " devices (" + candidates.front().label() + ": " +
                candidates.front().failure + ")");
  }

  AutoPlanResult result;
  const Candidate &best = *fits.front();
  result.options = options;
  result.options.plan = "";
  result.options.planExhaustive = false;
  result.options.plugin = best.plugin();
  result.options.recompute = best.recompute;
  result.chosen = best.label();
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - started)
                       .count();
  raw_string_ostream os(result.explanation);
  os << "plan=auto: " << candidates.size() << " configurations of " << n
     << " devices on cluster '" << cluster->name << "' in "
     << format("%.1f", seconds) << " s (" << fits.size() << " fit "
     << mib(limit) << ", " << tooBig.size() << " do not, " << failed
     << " do not compile";
  if (unweighed)
    os << ", " << unweighed << " slower not laid out";
  os << ")\n";
  os << format("  %-4s %-32s %12s %12s %12s %12s %14s\n", "#", "configuration",
               "step", "compute", "exposed comm", "bubble", "peak per rank");
  const size_t shown = options.explain ? std::min<size_t>(fits.size(), 8) : 1;
  for (size_t i = 0; i < shown; ++i) {
    const auto &p = *fits[i]->prediction;
    os << format("  %-4zu %-32s %12s %12s %12s %12s %14s\n", i + 1,
                 fits[i]->label().c_str(), ms(p.stepTime).c_str(),
                 ms(p.compute).c_str(), ms(p.communication).c_str(),
                 ms(p.bubble).c_str(), mib(double(p.peakBytes)).c_str());
  }
  if (options.explain) {
    for (const std::string &why : notOffered)
      os << "  not offered: " << why << "\n";
    for (const Candidate *c : tooBig)
      os << "  does not fit: " << c->label() << " needs "
         << (weighed(c) ? "" : "at least ")
         << mib(double(c->prediction->peakBytes)) << " per rank\n";
    for (const Candidate &c : candidates)
      if (!c.prediction)
        os << "  does not compile: " << c.label() << ": " << c.failure << "\n";
  }
  os << "chosen: " << best.label() << " (--plugin " << best.plugin()
     << (best.recompute ? " --recompute" : "") << ")";
  if (fits.size() > 1)
    os << ": " << whyWon(best, *fits[1]);
  os << "\n";
  return std::move(result);
}

} // namespace tessel::driver
