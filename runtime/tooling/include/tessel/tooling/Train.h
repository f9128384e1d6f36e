//===- Train.h - tessel-run's training loop ---------------------*- C++ -*-===//
//
// `tessel-run ART --steps N [--data NAME=FILE.npy]... [--data-lm FILE.npy]
// [--losses FILE.npy] [--save DIR [--save-every K]] [--resume DIR]` runs a
// training-step program up to step N on one executor: its STATE buffers
// (parameters, optimizer state) carry over from step to step; step k feeds
// row k mod rows of each data file; rank 0 reports each step and collects
// the output `loss`; checkpoints (Checkpoint.h) save and restore the states
// and the step (docs/training.md, docs/runtime.md).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLING_TRAIN_H
#define TESSEL_TOOLING_TRAIN_H

#include "tessel/tooling/Numerics.h"
#include "tessel/runtime/Communicator.h"
#include "tessel/runtime/MappedFile.h"
#include "tessel/runtime/Runtime.h"

#include "artifact.pb.h"

#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tessel::tooling {

struct TrainOptions {
  int steps = 0; // --steps; 0: not given (one run, or --repeat)
  std::vector<std::pair<std::string, std::string>> data; // --data NAME=FILE
  std::string dataLm;    // --data-lm FILE
  std::string losses;    // --losses FILE
  std::string save;      // --save DIR (--save-state DIR: the same)
  int saveEvery = 0;     // --save-every K; 0: at the end only
  std::string resume;    // --resume DIR
  std::string exportOnnx; // --export-onnx FILE
  bool exportExternal = false; // --export-onnx-external: FILE.data always
  std::string grads;      // --grads FILE
  std::string saveWeights; // --save-weights FILE.safetensors
  // --data-tokens FILE: a flat file of token ids (nanoGPT's train.bin),
  // read through a mapping; each step's rows are windows at seeded random
  // offsets (StepFeeds::tokenWindow).
  std::string dataTokens;
  std::string tokenDtype = "uint16"; // --token-dtype uint16|uint32
  int seed = 1337;                   // --seed
  int seq = 0, batch = 0;            // --seq, --batch: checked if given
  std::string metrics;    // --metrics FILE.jsonl
  int logEvery = 0;       // --log-every N; 0: a line every step
  bool eval = false;         // --eval: the loss on --data-lm, no steps
  std::string evalDataLm;    // --eval-data-lm FILE
  int evalEvery = 0;         // --eval-every N
  /// Whether a flag other than --steps was given.
  bool needsSteps() const {
    return !data.empty() || !dataLm.empty() || !losses.empty() ||
           !save.empty() || saveEvery || !resume.empty() ||
           !exportOnnx.empty() || !grads.empty() || !metrics.empty() ||
           !saveWeights.empty() ||
           logEvery || !dataTokens.empty();
  }
};

/// The per-step feeds of a program's inputs (--data, --data-lm), read and
/// checked against the program once.
class StepFeeds {
public:
  /// Reads the files; a file that fits no input (name, dtype, shape), or a
  /// label or gather index out of range in any row, is an error naming the
  /// input (and the row, the index, the value and the range).
  runtime::Status load(const TrainOptions &o, const runtime::Program &program);
  /// Whether input `name` is fed from a data file.
  bool feeds(const std::string &name) const;
  /// Binds step `step`'s rows to the executor's inputs.
  runtime::Status bind(runtime::Executor &exec, int64_t step);
  /// Before load(): load() checks every row of the labels against `info`
  /// (not owned; TrainingInfo.h).
  void checkLabelsOf(const artifact::TrainingInfo *info) { training = info; }
  /// The samples of one step: dim 0 of the first fed input (1 when none).
  int64_t samplesPerStep() const;
  /// --data-tokens: the offset of window `b` of data position `row` in a
  /// file of `tokens` tokens read `seq` at a time: splitmix64(seed ^
  /// splitmix64(row * batch + b)) mod (tokens - seq), so a resumed run
  /// reads what the uninterrupted one would have.
  static int64_t tokenWindow(uint64_t seed, int64_t row, int64_t batch,
                             int64_t b, int64_t tokens, int64_t seq);
  /// The rows of the per-step feeds (the fewest; 0 without any).
  int64_t rows() const;
  /// The tokens of one step: the elements of the first fed integer input
  /// (a language model's ids); 0 when none is.
  int64_t tokensPerStep() const;
  /// Before the step that reads data position `row`: where a feed's rows
  /// begin again (a run longer than its data), the line that says so
  /// ("--data-lm FILE: its 8 rows begin again at step 9 (epoch 2)");
  /// else "".
  std::string epochNote(int64_t row, int64_t step) const;

private:
  struct Feed {
    std::string input;
    std::string what;    // the flag, for messages: "--data x=FILE"
    runtime::Tensor data;
    bool perStep = false; // data's first dim indexes steps
    int64_t rows = 1;
    // Each step's slice [begin, end) of the row's last dim.
    int64_t begin = 0, end = 0;
    runtime::Tensor staging; // the input's shape
    // --data-tokens: the mapped file, its token width and count, and which
    // of the window this input takes (0: [i, i+seq), 1: [i+1, i+seq+1)).
    std::shared_ptr<runtime::MappedFile> tokens;
    int tokenBytes = 0;
    int64_t numTokens = 0, shift = 0;
    uint64_t seed = 0;
  };
  runtime::Status loadTokens(const TrainOptions &o,
                             const runtime::Program &program);
  runtime::Status stageTokens(Feed &f, int64_t row);
  /// Checks `f` against its input; `lm`: a --data-lm feed (always per
  /// step, its rows cut to [begin, end) in the last dim).
  runtime::Status add(const runtime::Program &program, Feed f, bool lm);
  /// Copies row `row` of `f` (cut to [begin, end)) into its staging tensor.
  static void stage(Feed &f, int64_t row);
  /// Every row of every feed: labels in range (checkLabelsOf), and the
  /// indices a gather reads (an embedding's token ids) in range.
  runtime::Status checkRows(const runtime::Program &program);
  std::vector<Feed> list;
  const artifact::TrainingInfo *training = nullptr;
  const runtime::Program *program = nullptr; // load()'s, for the per-step checks
};

/// The learning rate of update `k` (0 at the first step) of the optimizer
/// `info` records, as the step computes it (lr times the schedule's
/// factor, in f32; past a cosine's total_steps, its last value); nullopt
/// when the artifact records no optimizer.
std::optional<double> scheduledLearningRate(const artifact::TrainingInfo &info,
                                            int64_t k);

/// How the steps are reported beyond the per-step line.
struct StepLog {
  /// --metrics: one JSON object per step, written and flushed as it ends:
  /// step, loss, lr, ms, tokens_per_s (or samples_per_s).
  std::FILE *metrics = nullptr;
  /// --log-every N: a line every N steps (and the last) with the rate and
  /// the time left; 0: a line every step.
  int logEvery = 0;
  /// The optimizer's schedule (lr), when the artifact records one.
  const artifact::TrainingInfo *training = nullptr;
};

/// What a training run measured.
struct StepResults {
  std::vector<double> ms;     // per step
  std::vector<float> losses;  // per step, when the program has `loss`
};

/// Runs steps `start`+1 .. `stop` of the training (counted from its start)
/// on `exec`, binding `feeds`' rows for data position `dataPosition` + k - 
/// `start` before step k+1; with `report` prints one line per step to stderr
/// (step/stop, loss, ms/step). Collects the output `loss` (a one-element
/// f32) at each step when the program has it; `needLoss`: it must. A
/// non-finite loss (or, with numerics.instructions, value) stops the
/// steps with an error naming the step, on every rank (Numerics.h). After
/// each step, `after(step done, next data position)` (a checkpoint) when
/// given.
runtime::Status
runSteps(runtime::Executor &exec, StepFeeds &feeds, int64_t start,
         int64_t stop, int64_t dataPosition, bool report, bool needLoss,
         const NumericsGuard &numerics, StepResults &out,
         const std::function<runtime::Status(int64_t, int64_t)> &after = {},
         const StepLog &log = {});

/// This process's peak resident set (getrusage's ru_maxrss), in MiB.
double peakRssMiB();
/// After the steps: every rank's peak RSS, gathered over `comm` (a
/// collective: every rank of a `worldSize` > 1 run calls it); with
/// `report`, one line per rank to stderr ("tessel-run: peak RSS 41.7 MiB
/// (rank 1's process)").
runtime::Status reportPeakRss(runtime::Communicator *comm, int rank,
                              int worldSize, bool report);

} // namespace tessel::tooling

#endif // TESSEL_TOOLING_TRAIN_H
