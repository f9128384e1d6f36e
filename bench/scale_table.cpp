//===- scale_table.cpp - Table 1 of Narayanan et al. (SC'21), predicted ---===//
//
// For each GPT of the paper's Table 1 (and GPT-3 175B on 1024 H100s): the
// TFLOP/s per GPU TesselCost predicts for the paper's configuration, and
// the configuration its search picks given only the model, the batch and
// the cluster, with its prediction and the search's time. Run through
// bench/run-scale-table; docs/gpt-at-scale.md shows the table.
//
//   scale_table [--csv] [--a100 FILE] [--h100 FILE]
//
// --a100 / --h100: cluster files for the A100 rows and the H100 row
// (default: the built-in a100 and h100); their node counts are replaced by
// each row's.
//
//===----------------------------------------------------------------------===//

#include "tessel/Cost/ClusterFile.h"
#include "tessel/Cost/TransformerSearch.h"

#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

using namespace tessel::cost;

namespace {

struct Row {
  const char *params;
  int64_t heads, hidden, layers, tp, pp, gpus, batch;
  /// Published TFLOP/s per GPU (0: none).
  double published;
  /// From the authors' launch script (Megatron-LM examples/sc21/
  /// run_table_1.sh): micro-batch size and layers per virtual stage (0: not
  /// interleaved).
  int64_t microbatch, layersPerVirtualStage;
  bool h100;
};

// Narayanan et al., SC'21, Table 1 (seq 2048, vocab 51200, DGX A100-80GB);
// the last row has no published figure.
const Row kRows[] = {
    {"1.7", 24, 2304, 24, 1, 1, 32, 512, 137, 16, 0, false},
    {"3.6", 32, 3072, 30, 2, 1, 64, 512, 138, 16, 0, false},
    {"7.5", 32, 4096, 36, 4, 1, 128, 512, 142, 16, 0, false},
    {"18.4", 48, 6144, 40, 8, 1, 256, 1024, 135, 8, 0, false},
    {"39.1", 64, 8192, 48, 8, 2, 512, 1536, 138, 4, 0, false},
    {"76.1", 80, 10240, 60, 8, 4, 1024, 1792, 140, 2, 5, false},
    {"145.6", 96, 12288, 80, 8, 8, 1536, 2304, 148, 2, 5, false},
    {"310.1", 128, 16384, 96, 8, 16, 1920, 2160, 155, 1, 3, false},
    {"529.6", 128, 20480, 105, 8, 35, 2520, 2520, 163, 1, 1, false},
    {"1008", 160, 25600, 128, 8, 64, 3072, 3072, 163, 1, 0, false},
    // GPT-3 175B on 128 DGX H100 nodes: no published figure; the
    // "paper's" columns are Megatron's usual GPT-3 plan (tp 8, pp 8),
    // microbatch chosen by the model.
    {"175", 96, 12288, 96, 8, 8, 1024, 1536, 0, 0, 0, true},
};

int fail(const std::string &msg) {
  llvm::errs() << "scale_table: " << msg << "\n";
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  bool csv = false;
  std::optional<ClusterSpec> a100 = getBuiltinCluster("a100");
  std::optional<ClusterSpec> h100 = getBuiltinCluster("h100");
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--csv")) {
      csv = true;
    } else if ((!strcmp(argv[i], "--a100") || !strcmp(argv[i], "--h100")) &&
               i + 1 < argc) {
      llvm::Expected<ClusterSpec> c = loadClusterFile(argv[i + 1]);
      if (!c)
        return fail(llvm::toString(c.takeError()));
      (argv[i][2] == 'a' ? a100 : h100) = *c;
      ++i;
    } else {
      return fail(std::string("unknown argument '") + argv[i] +
                  "'; usage: scale_table [--csv] [--a100 FILE] [--h100 FILE]");
    }
  }

  if (csv)
    std::printf("params_b,gpus,tp,pp,dp,global_batch,predicted_tflops,auto_tp,"
                "auto_pp,auto_dp,auto_predicted_tflops,search_seconds\n");
  else
    std::printf("%-7s %5s %3s %3s %4s %5s %4s %2s %9s %9s %6s | %-34s %9s "
                "%8s\n",
                "params", "gpus", "tp", "pp", "dp", "batch", "mb", "v",
                "published", "predicted", "error", "auto (tp pp dp mb v ...)",
                "predicted", "search");
  for (const Row &row : kRows) {
    ClusterSpec cluster = row.h100 ? *h100 : *a100;
    cluster.nodes = row.gpus / cluster.devicesPerNode;
    GptShape shape{row.layers, row.hidden, row.heads, 2048, 51200};
    ParallelConfig paper;
    paper.tp = row.tp;
    paper.pp = row.pp;
    paper.dp = row.gpus / (row.tp * row.pp);
    paper.recompute = true;
    paper.chunks = row.layersPerVirtualStage
                       ? row.layers / row.pp / row.layersPerVirtualStage
                       : 1;
    // The paper's microbatch, or the best the model finds for its tp/pp/dp.
    std::optional<TransformerPrediction> predicted;
    for (int64_t mb = 1; mb <= row.batch / paper.dp; ++mb) {
      if (row.microbatch && mb != row.microbatch)
        continue;
      if ((row.batch / paper.dp) % mb)
        continue;
      ParallelConfig c = paper;
      c.microbatch = mb;
      llvm::Expected<TransformerPrediction> p =
          predictTransformer(shape, row.batch, c, cluster);
      if (!p)
        return fail(llvm::toString(p.takeError()));
      if (p->memoryBytes > cluster.device.memoryBytes && !row.microbatch)
        continue;
      if (!predicted || p->stepTime < predicted->stepTime) {
        predicted = *p;
        paper.microbatch = mb;
      }
    }
    if (!predicted)
      return fail(std::string("row ") + row.params + ": nothing fits");

    auto start = std::chrono::steady_clock::now();
    llvm::Expected<PlanSearchResult> found =
        searchTransformerPlans(shape, row.batch, cluster);
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    if (!found)
      return fail(std::string("row ") + row.params + ": " +
                  llvm::toString(found.takeError()));
    const PlanCandidate &best = found->best.front();
    if (csv) {
      std::printf("%s,%lld,%lld,%lld,%lld,%lld,%.1f,%lld,%lld,%lld,%.1f,%.2f\n",
                  row.params, (long long)row.gpus, (long long)paper.tp,
                  (long long)paper.pp, (long long)paper.dp,
                  (long long)row.batch, predicted->tflopsPerDevice,
                  (long long)best.config.tp, (long long)best.config.pp,
                  (long long)best.config.dp, best.prediction.tflopsPerDevice,
                  seconds);
      continue;
    }
    char published[16] = "-", error[16] = "-";
    if (row.published > 0) {
      std::snprintf(published, sizeof(published), "%.0f", row.published);
      std::snprintf(error, sizeof(error), "%+.1f%%",
                    100.0 * (predicted->tflopsPerDevice - row.published) /
                        row.published);
    }
    std::printf("%-7s %5lld %3lld %3lld %4lld %5lld %3lld%s %2lld %9s %9.1f "
                "%6s | %-34s %9.1f %7.2fs\n",
                row.params, (long long)row.gpus, (long long)paper.tp,
                (long long)paper.pp, (long long)paper.dp, (long long)row.batch,
                (long long)paper.microbatch, row.microbatch ? " " : "*",
                (long long)paper.chunks, published, predicted->tflopsPerDevice,
                error, best.config.str().c_str(),
                best.prediction.tflopsPerDevice, seconds);
    std::printf("        paper's plan: step %.2f s = compute %.2f + comm %.2f + "
                "bubble %.2f; %.1f GiB/GPU | auto: step %.2f s = %.2f + %.2f + "
                "%.2f; %.1f GiB; %lld configs, %lld simulated\n",
                predicted->stepTime, predicted->computeTime,
                predicted->exposedCommTime, predicted->bubbleTime,
                predicted->memoryBytes / (1u << 30), best.prediction.stepTime,
                best.prediction.computeTime, best.prediction.exposedCommTime,
                best.prediction.bubbleTime,
                best.prediction.memoryBytes / (1u << 30),
                (long long)found->enumerated, (long long)found->simulated);
  }
  if (!csv)
    std::printf("* microbatch chosen by the model for the paper's tp/pp/dp "
                "(no published one)\n");
  return 0;
}
