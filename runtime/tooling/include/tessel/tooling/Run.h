//===- Run.h - Running an artifact: what tessel-run does ---------*- C++ -*-===//
//
// tessel-run's work once its flags are parsed (tools/tessel-run parses them
// into RunOptions): open and check the artifact, start or join the world of
// ranks (Launch.h), bind inputs, run once or repeatedly, or train (Train.h)
// with checkpoints (Checkpoint.h), gradients (Grads.h) and ONNX export
// (OnnxExport.h), then write outputs, losses, traces and timelines. Every
// failure is one message on stderr and exit status 1; a usage error 2.
//
// The same work as a library: RankRun's phases (open, prepare, bind the
// inputs, then eval, train or infer, then finish) run one rank of an
// artifact in this process, each message going through a RunReporter.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLING_RUN_H
#define TESSEL_TOOLING_RUN_H

#include "tessel/runtime/Executor.h"
#include "tessel/tooling/Launch.h"
#include "tessel/tooling/Train.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tessel::tooling {

/// Every flag of tessel-run (its --help).
struct RunOptions {
  std::string artifact;
  std::vector<std::string> plugins; // --load-plugin
  std::vector<std::pair<std::string, std::string>> inputs;  // name, file
  std::vector<std::string> outputs; // [NAME=]FILE, resolved by resolveOutputs
  int threads = 1;
  int repeat = 1;
  bool repeatGiven = false;
  int rank = 0;
  std::string backend = "cpu";
  bool verify = true;
  bool verbose = false; // --verbose
  bool checkCollectives = false; // --check-collectives
  int ranks = 0;        // -n; 0 when not given
  bool rankGiven = false;
  int timeout = 30;     // seconds
  int maxRestarts = 0;  // --max-restarts (the launcher's)
  std::string trace;    // --trace FILE.json; empty: none
  std::string timeline; // --timeline FILE.svg; empty: none
  bool checkNumerics = false; // --check-numerics
  runtime::CollectiveOverlap overlap =
      runtime::CollectiveOverlap::Auto; // --overlap-collectives
  TrainOptions train;
};

/// "tessel-run: MSG (see tessel-run --help)" on stderr; returns 2.
int usageError(const std::string &msg);

/// Where a run's messages go, every line "tessel-run: ...": reports on
/// `out`, errors and warnings on `err`. One per run, passed explicitly (no
/// process state); print and note do not flush, flush does, so the order of
/// the two streams is tessel-run's.
class RunReporter {
public:
  std::FILE *out = stdout;
  std::FILE *err = stderr;
  /// "rank K: " in a world of several ranks; "" otherwise.
  std::string rankPrefix;
  /// The world communicator of a multi-rank run: its hang finder's report
  /// (runtime::opLogReport) follows an error.
  runtime::Communicator *comm = nullptr;

  /// "tessel-run: [rank K: ]error: MSG" on `err`, then the hang finder's
  /// report; returns 1, the exit status.
  int fail(const std::string &msg) const;
  /// "tessel-run: MSG (see tessel-run --help)" on `err`; returns 2.
  int usage(const std::string &msg) const;
  /// printf onto `out` (the format has its own "tessel-run: " and newline).
  void print(const char *fmt, ...) const __attribute__((format(printf, 2, 3)));
  /// printf onto `err`.
  void note(const char *fmt, ...) const __attribute__((format(printf, 2, 3)));
  /// Flushes `out`.
  void flush() const;
};

struct RankState;

/// One rank of an artifact run in this process, in the phases tessel-run
/// goes through: open, prepare, bindInputs, startTogether, then eval (and
/// stop), or grads (optional) and train or infer, then finish. Every phase
/// returns an exit status: 0 to go on; else the error was reported through
/// the RunReporter and the status is tessel-run's (1; 2 for a usage error;
/// 75 for a training that can restart from its checkpoint).
class RankRun {
public:
  /// `o` and `reporter` must outlive the run; the reporter learns the
  /// world's communicator once open joins it.
  RankRun(const RunOptions &o, RunReporter &reporter);
  ~RankRun();
  RankRun(const RankRun &) = delete;
  RankRun &operator=(const RankRun &) = delete;

  /// Opens and checks the artifact (checksums, plugins, the number of
  /// ranks against `w`), joins the world (a session with the peers when it
  /// has several ranks), loads this rank's program, checks every file this
  /// rank will write, and creates the executor of --device.
  int open(const WorldInfo &w);
  /// Reads what tesselc --train recorded (training.pb), checks the source
  /// model of --export-onnx, loads the per-step data (--data, --data-lm),
  /// tidies the checkpoint directories, and loads --resume's checkpoint.
  int prepare();
  /// Binds the --input files: every input of the program exactly once
  /// (with the data files), with the right dtype, shape and index range.
  int bindInputs();
  /// Every rank starts the runs together (a barrier; the test hooks).
  int startTogether();
  /// --eval: the loss of the loaded states on --data-lm, as a line.
  int eval();
  /// --grads: the gradients of the first batch into the --grads file.
  int grads();
  /// --steps: trains up to step --steps, with its checkpoints (--save),
  /// evaluations (--eval-data-lm), metrics and the --export-onnx model.
  int train();
  /// Runs the program once, or with --repeat K a warm-up and K timed runs.
  int infer();
  /// Writes the trace and timeline, the timing line, the outputs and the
  /// losses, and leaves the world.
  int finish();

  /// Saves the executor's states as the checkpoint of `step` into --save
  /// (checked finite first: never a checkpoint with a non-finite state),
  /// with the losses so far; a line on the rank that reports.
  runtime::Status saveCheckpoint(int64_t step, int64_t dataPosition);
  /// The executor, once open created it (null before).
  runtime::Executor *executor() const;

private:
  std::unique_ptr<RankState> s;
};

/// One rank of `o` in this process, in the world `w`: RankRun's phases in
/// order. Returns the exit status.
int runRank(const RunOptions &o, const WorldInfo &w, RunReporter &reporter);

/// Runs `o`: loads its plugins, then, in a launcher (-n N without a world
/// in the environment), starts the ranks as processes running `argv` again
/// (restarted up to --max-restarts times from the last checkpoint); else
/// runs this process's rank. Returns the exit status.
int runArtifactMain(const RunOptions &o, int argc, char **argv);

} // namespace tessel::tooling

#endif // TESSEL_TOOLING_RUN_H
