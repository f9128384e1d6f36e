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
#include "tessel/Predict/Predict.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>

using namespace llvm;

namespace tessel::driver {

Expected<cost::ClusterSpec> loadCluster(StringRef name) {
  if (auto c = cost::getBuiltinCluster(name))
    return *c;
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
  Expected<cost::ClusterSpec> cluster = loadCluster(options.cluster);
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

  std::vector<Candidate> candidates;
  const int64_t n = options.devices;
  for (int64_t pp : divisors(n))
    for (int64_t tp : divisors(n / pp)) {
      const int64_t dp = n / pp / tp;
      for (int zero : dp > 1 ? std::vector<int>{0, 2, 3} : std::vector<int>{0})
        for (int mb : microbatchCounts(pp)) {
          Candidate c;
          c.dp = dp, c.tp = tp, c.pp = pp, c.zero = zero, c.microbatches = mb;
          candidates.push_back(c);
        }
    }

  auto context = createContext();
  auto predict = [&](Candidate &c) {
    CompileOptions o = options;
    o.plan = "";
    o.plugin = c.plugin();
    o.recompute = c.recompute;
    o.emit = Emit::Partitioned;
    o.output = "";
    o.predict = o.report = o.explain = false;
    o.timelines.clear();
    Expected<CompileResult> r =
        compile(*context, o, [](const Message &) {});
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
    Expected<mlir::tessel::Prediction> p =
        mlir::tessel::predictStep(*r->module, *cluster);
    if (!p) {
      c.failure = firstLine(p.takeError());
      return;
    }
    c.prediction = std::move(*p);
  };
  for (Candidate &c : candidates)
    predict(c);
  // What does not fit may with its activations recomputed.
  std::vector<Candidate> recomputed;
  for (const Candidate &c : candidates)
    if (c.prediction && double(c.prediction->peakBytes) > limit) {
      Candidate r = c;
      r.recompute = true;
      r.prediction.reset();
      predict(r);
      recomputed.push_back(std::move(r));
    }
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
