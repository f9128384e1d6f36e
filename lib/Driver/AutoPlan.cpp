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

  auto context = createContext();
  // The batch: dim 0 of the step's inputs (what the microbatches and dp
  // split), read once from the imported model.
  int64_t batch = 0;
  {
    CompileOptions o = options;
    o.plan = "";
    o.train = false;
    o.emit = Emit::Mlir;
    o.output = "";
    o.predict = o.report = o.explain = false;
    Expected<CompileResult> r = compile(*context, o, [](const Message &) {});
    if (!r)
      return r.takeError();
    for (auto fn : (*r->module).getOps<mlir::func::FuncOp>()) {
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
  std::vector<Candidate> candidates;
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

  auto predict = [&](mlir::MLIRContext &ctx, Candidate &c) {
    CompileOptions o = options;
    o.plan = "";
    o.plugin = c.plugin();
    o.recompute = c.recompute;
    o.emit = Emit::Partitioned;
    o.output = "";
    o.predict = o.report = o.explain = false;
    o.timelines.clear();
    o.verifyPasses = false;
    o.predictExpand = true;
    Expected<CompileResult> r =
        compile(ctx, o, [](const Message &) {});
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
        expanded ? *expanded : *r->module, *cluster);
    if (!p) {
      c.failure = firstLine(p.takeError());
      return;
    }
    c.prediction = std::move(*p);
  };
  // Candidates compile independently: one MLIR context per worker thread,
  // as many workers as cores (--threads), each taking the next candidate.
  const unsigned workers = std::max(
      1u, options.autoThreads > 0 ? unsigned(options.autoThreads)
                                  : std::thread::hardware_concurrency());
  auto predictAll = [&](std::vector<Candidate> &list) {
    std::atomic<size_t> next{0};
    auto work = [&](mlir::MLIRContext *ctx) {
      for (size_t i; (i = next++) < list.size();)
        predict(*ctx, list[i]);
    };
    const size_t n = std::min<size_t>(workers, list.size());
    if (n <= 1) {
      work(context.get());
      return;
    }
    std::vector<std::unique_ptr<mlir::MLIRContext>> contexts;
    std::vector<std::thread> threads;
    for (size_t t = 1; t < n; ++t) {
      contexts.push_back(createContext());
      threads.emplace_back(work, contexts.back().get());
    }
    work(context.get());
    for (std::thread &t : threads)
      t.join();
  };
  predictAll(candidates);
  // What does not fit may with its activations recomputed (not in a
  // pipeline, which does not recompute yet).
  std::vector<Candidate> recomputed;
  for (const Candidate &c : candidates)
    if (c.prediction && c.pp == 1 &&
        double(c.prediction->peakBytes) > limit) {
      Candidate r = c;
      r.recompute = true;
      r.prediction.reset();
      recomputed.push_back(std::move(r));
    }
  predictAll(recomputed);
  candidates.insert(candidates.end(), recomputed.begin(), recomputed.end());

  std::vector<const Candidate *> fits, tooBig;
  size_t failed = 0;
  for (const Candidate &c : candidates) {
    if (!c.prediction)
      ++failed;
    else if (double(c.prediction->peakBytes) > limit)
      tooBig.push_back(&c);
    else
      fits.push_back(&c);
  }
  auto faster = [](const Candidate *a, const Candidate *b) {
    return a->prediction->stepTime < b->prediction->stepTime;
  };
  std::sort(fits.begin(), fits.end(), faster);
  if (fits.empty()) {
    if (!tooBig.empty()) {
      const Candidate *least = *std::min_element(
          tooBig.begin(), tooBig.end(), [](const Candidate *a, const Candidate *b) {
            return a->prediction->peakBytes < b->prediction->peakBytes;
          });
      return fail("--plan=auto: no configuration on " + Twine(n) +
                  " devices fits " + mib(limit) + " per device; the smallest "
                  "need found is " + mib(double(least->prediction->peakBytes)) +
                  " per rank, for " + least->label());
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
     << " do not compile)\n";
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
