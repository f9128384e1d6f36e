//===- RankRun.cpp - One rank's run of an artifact, in phases -------------===//
//
// RankRun (Run.h): what tessel-run does in each rank's process, as phases
// over a RankState: open the artifact and join the world, prepare the data
// and checkpoints, bind the inputs, then evaluate, train or run, then write
// what the run produced.
//
//===----------------------------------------------------------------------===//
#include "tessel/tooling/Run.h"

#include "RunInternal.h"
#include "tessel/tooling/Checkpoint.h"
#include "tessel/tooling/Eval.h"
#include "tessel/tooling/Grads.h"
#include "tessel/tooling/Launch.h"
#include "tessel/tooling/Numerics.h"
#include "tessel/tooling/OnnxExport.h"
#include "tessel/tooling/Pipeline.h"
#include "tessel/tooling/Trace.h"
#include "tessel/tooling/TrainingInfo.h"
#include "tessel/tooling/Weights.h"
#include "tessel/runtime/CustomOp.h"
#include "tessel/runtime/Runtime.h"
#include "tessel/runtime/Writable.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <functional>
#include <string>
#include <vector>

using namespace tessel::runtime;

namespace tessel::tooling {

/// What a RankRun holds between its phases, in the order it is built (and
/// torn down in reverse: the executor before the program and the session).
struct RankState {
  RankState(const RunOptions &o, RunReporter &out) : o(o), out(out) {}

  const RunOptions &o;
  RunReporter &out;
  int worldSize = 1;
  int rank = 0;
  std::unique_ptr<Artifact> artifact;
  RankSession session;
  std::shared_ptr<const Program> program;
  /// (name, file) of every --output.
  std::vector<std::pair<std::string, std::string>> outputs;
  std::unique_ptr<Executor> exec;
  ExecutorOptions eo;
  NumericsGuard numerics;
  /// What tesselc --train says beyond the program: the labels' range, the
  /// source model of --export-onnx.
  tessel::artifact::TrainingInfo training;
  bool hasTraining = false;
  int lossRank = 0;
  /// Per-step data (--data, --data-lm), checked against the inputs.
  StepFeeds feeds;
  CheckpointGroup group;
  /// Where this run starts: --resume's checkpoint, or step 0.
  CheckpointInfo start;
  /// Every step's loss before this run's (from --resume's losses.npy):
  /// saved with each checkpoint, and written by --losses after a restart.
  std::vector<float> history;
  bool historyComplete = true;
  /// The timed runs' (or steps') times, in ms.
  std::vector<double> times;
  /// Pipelined programs: the time of the timed runs blocked on peers.
  BubbleMeter bubble;
  StepResults steps;
  /// The training's last checkpoint (-1: none yet).
  int64_t lastSaved = -1;
  /// --metrics, while the training has it open.
  std::FILE *metrics = nullptr;

  int fail(const std::string &msg) const { return out.fail(msg); }
  /// Whether this rank reports the steps and collects the losses: rank 0;
  /// a pipelined step's loss is on its last stage's rank (loss_rank).
  bool reports() const { return rank == lossRank || worldSize == 1; }
  /// Whether this rank writes the outputs and the trained model.
  bool writesOutputs() const { return rank == 0 || worldSize == 1; }
};

namespace {

/// The (name, file) of every --output: NAME=FILE when NAME is one of the
/// program's outputs, otherwise the whole value is the file of the first
/// output (so a path with '=' in it works).
int resolveOutputs(RankState &s) {
  const Program &program = *s.program;
  for (const std::string &spec : s.o.outputs) {
    size_t eq = spec.find('=');
    if (eq != std::string::npos &&
        program.findOutput(spec.substr(0, eq)) >= 0) {
      if (eq + 1 == spec.size())
        return s.out.usage("--output " + spec + " needs a file after '='");
      s.outputs.emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
      continue;
    }
    if (program.outputs.empty())
      return s.fail("--output " + spec + ": the program has no outputs");
    s.outputs.emplace_back(program.outputs[0].first, spec);
  }
  return 0;
}

/// --losses: the losses of the steps this run executed.
int writeLosses(const RankState &s, const std::vector<float> &losses) {
  Tensor t = Tensor::fromVector(DType::F32,
                                {static_cast<int64_t>(losses.size())}, losses);
  if (Status st = writeNpy(s.o.train.losses, t); !st)
    return s.fail("--losses: " + st.message());
  s.out.print("tessel-run: losses f32 [%zu] -> %s\n", losses.size(),
              s.o.train.losses.c_str());
  s.out.flush();
  return 0;
}

/// The losses --losses writes: a restarted group (the launcher's
/// --max-restarts) writes every step's loss, those before its checkpoint
/// too.
std::vector<float> lossesToWrite(const RankState &s) {
  if (!std::getenv("TESSEL_RESTART") || !s.historyComplete)
    return s.steps.losses;
  std::vector<float> all = s.history;
  all.insert(all.end(), s.steps.losses.begin(), s.steps.losses.end());
  return all;
}

/// The exit status of a rank whose group cannot go on (a peer died, hung or
/// was cut off) in a training that saves checkpoints: a job script (srun,
/// mpirun) restarts the job with --resume when it sees it.
constexpr int kRestartable = 75; // EX_TEMPFAIL

int restartable(const RunReporter &out, const std::string &saveDir) {
  CheckpointInfo info;
  std::string from =
      readCheckpointInfo(saveDir, info)
          ? "the checkpoint of step " + std::to_string(info.step) + " in " +
                saveDir + " (rerun with --resume " + saveDir + ")"
          : "the start (no checkpoint in " + saveDir + " yet)";
  out.note("tessel-run: %srestartable: the training stopped with its "
           "group; it can restart from %s; exit status %d\n",
           out.rankPrefix.c_str(), from.c_str(), kRestartable);
  return kRestartable;
}

/// --export-onnx and --save-weights: the states of the last step, put
/// together on rank 0 from the checkpoint --save wrote (or a temporary one
/// beside the first output).
Status writeTrained(RankState &s, int64_t step, int64_t dataPosition) {
  const RunOptions &o = s.o;
  std::string dir = o.train.save;
  const bool temporary = dir.empty();
  if (temporary) {
    dir = (o.train.exportOnnx.empty() ? o.train.saveWeights
                                      : o.train.exportOnnx) +
          ".states";
    CheckpointInfo info;
    info.step = step;
    info.dataPosition = dataPosition;
    info.ranks = s.worldSize;
    if (s.group.rank == 0)
      TSL_RETURN_IF_ERROR(removeCheckpointDir(dir));
    TSL_RETURN_IF_ERROR(saveCheckpoint(*s.exec, dir, info, s.group));
  }
  Status result = Status::ok();
  if (s.group.rank == 0) {
    SavedStates saved;
    result = saved.read(dir);
    if (result && !o.train.exportOnnx.empty()) {
      ExportOptions eo;
      eo.external = o.train.exportExternal;
      result =
          exportOnnx(o.artifact, s.training, saved, o.train.exportOnnx, eo);
      if (result)
        s.out.print("tessel-run: trained model (%d tensors) -> %s\n",
                    s.training.tensors_size(), o.train.exportOnnx.c_str());
    }
    if (result && !o.train.saveWeights.empty()) {
      std::vector<std::string> notes;
      size_t names = 0;
      result = saveWeights(s.training, saved, o.train.saveWeights, notes,
                           names);
      for (const std::string &n : notes)
        s.out.note("tessel-run: --save-weights: %s\n", n.c_str());
      if (result)
        s.out.print("tessel-run: trained weights (%zu names) -> %s\n", names,
                    o.train.saveWeights.c_str());
    }
    if (temporary)
      if (Status st = removeCheckpointDir(dir); !st && result)
        result = st;
  }
  if (s.worldSize > 1)
    TSL_RETURN_IF_ERROR(s.group.comm->barrier());
  return result;
}

// --- open: the artifact, the world, the program, the executor ----------===//

/// Opens and checks the artifact and joins the world: the session with the
/// peers, this rank's program.
int openArtifact(RankState &s, const WorldInfo &w) {
  const RunOptions &o = s.o;
  LoadOptions lo;
  lo.verifyChecksums = o.verify;
  if (Status st = Artifact::open(o.artifact, s.artifact, lo); !st)
    return s.fail(st.message());
  if (Status st = checkRequiredPlugins(s.artifact->manifest()); !st)
    return s.fail(st.message());
  s.worldSize = w.fromEnv ? w.size : 1;
  std::string how = w.fromEnv ? w.source + " says " + std::to_string(w.size)
                    : o.ranks ? "-n " + std::to_string(o.ranks)
                              : "no -n";
  if (w.fromEnv && o.ranks && o.ranks != w.size)
    return s.fail("-n " + std::to_string(o.ranks) + " but " + how);
  if (int rc = checkRanks(o, s.out, *s.artifact, s.worldSize, how))
    return rc;
  if (s.worldSize > 1 && o.rankGiven)
    return s.out.usage("--rank cannot be combined with a world of " +
                       std::to_string(s.worldSize) + " ranks");
  s.rank = s.worldSize > 1 ? w.rank : o.rank;
  if (s.worldSize > 1) {
    RankSession::SessionOptions so;
    so.timeout = std::chrono::seconds(o.timeout);
    so.backend = o.backend;
    so.verbose = o.verbose;
    so.log.check = o.checkCollectives;
    so.log.groupName = meshGroupNamer(s.artifact->mesh());
    Status st = s.session.start(w, so);
    s.out.comm = s.session.comm();
    if (!st)
      return s.fail(st.message());
  }
  if (Status st = s.artifact->loadProgram(s.rank, s.program); !st)
    return s.fail(st.message());
  return 0;
}

/// Every file this rank will write, checked before any work: rank 0 writes
/// the outputs, losses, gradients and the trained model; every rank its
/// trace.
int checkFiles(RankState &s) {
  const RunOptions &o = s.o;
  if (int rc = resolveOutputs(s))
    return rc;
  std::vector<std::pair<std::string, std::string>> files; // flag, path
  if (s.writesOutputs()) {
    for (const auto &[name, file] : s.outputs)
      files.emplace_back("--output", file);
    if (!o.train.losses.empty())
      files.emplace_back("--losses", o.train.losses);
    if (!o.train.exportOnnx.empty())
      files.emplace_back("--export-onnx", o.train.exportOnnx);
    if (!o.train.saveWeights.empty())
      files.emplace_back("--save-weights", o.train.saveWeights);
    if (!o.train.grads.empty())
      files.emplace_back("--grads", o.train.grads);
  }
  if (!o.trace.empty())
    files.emplace_back("--trace", s.worldSize > 1
                                      ? rankTracePath(o.trace, s.rank)
                                      : o.trace);
  if (!o.timeline.empty()) {
    if (!s.program->pipelined)
      return s.fail("--timeline " + o.timeline + ": rank " +
                    std::to_string(s.rank) + "'s program is not pipelined (no "
                    "instruction carries a schedule action; compile with "
                    "tesselc --mesh pp=N --schedule S)");
    files.emplace_back("--timeline", rankTracePath(o.timeline, s.rank));
  }
  for (const auto &[flag, file] : files)
    if (Status st = checkWritable(flag, file); !st)
      return s.fail(st.message());
  return 0;
}

/// The executor of --device for this rank's program.
int createRankExecutor(RankState &s) {
  const RunOptions &o = s.o;
  s.eo.threads = o.threads;
  s.eo.comm = s.session.comm();
  s.eo.overlap = o.overlap;
  if (Status st = createExecutor(o.backend, s.program, s.eo, s.exec); !st)
    return s.fail(st.message());
  s.numerics.comm = s.session.comm();
  s.numerics.rank = s.rank;
  s.numerics.worldSize = s.worldSize;
  s.numerics.instructions = o.checkNumerics;
  if (o.checkNumerics && !s.exec->setCheckNumerics(true))
    return s.fail(std::string("--check-numerics: the ") + s.exec->backend() +
                  " backend cannot check instructions; run with --device cpu");
  return 0;
}

// --- prepare: training.pb, the data, the checkpoints --------------------===//

/// training.pb, and the source model of --export-onnx checked against the
/// manifest now, not after the training.
int readTraining(RankState &s) {
  const RunOptions &o = s.o;
  if (Status st = readTrainingInfo(o.artifact, s.training, s.hasTraining); !st)
    return s.fail(st.message());
  s.lossRank = s.hasTraining ? s.training.loss_rank() : 0;
  if (!o.train.saveWeights.empty() &&
      (!s.hasTraining || s.training.tensors_size() == 0))
    return s.fail("--save-weights " + o.train.saveWeights + ": " + o.artifact +
                  " trains no tensor of a model (compile it with tesselc "
                  "--train from an ONNX model)");
  if (o.train.exportOnnx.empty())
    return 0;
  if (!s.hasTraining || s.training.source_model().empty())
    return s.fail("--export-onnx " + o.train.exportOnnx + ": " + o.artifact +
                  " has no source model to write the trained tensors into "
                  "(compile it with tesselc --train from an ONNX model)");
  if (!s.writesOutputs())
    return 0;
  std::shared_ptr<MappedFile> source;
  bool present = false;
  if (Status st = openArtifactFile(o.artifact, s.training.source_model(),
                                   source, present);
      !st)
    return s.fail("--export-onnx " + o.train.exportOnnx + ": " + st.message());
  if (!present)
    return s.fail("--export-onnx " + o.train.exportOnnx + ": " + o.artifact +
                  "/" + s.training.source_model() +
                  ": missing from the artifact");
  return 0;
}

/// Checkpoints: rank 0 tidies up after a killed save (of --resume and
/// --save), every rank waiting for it.
int recoverCheckpoints(RankState &s) {
  const RunOptions &o = s.o;
  if (o.train.resume.empty() && o.train.save.empty())
    return 0;
  if (s.rank == 0) {
    if (!o.train.resume.empty())
      if (Status st = recoverCheckpointDir(o.train.resume, false); !st)
        return s.fail(st.message());
    if (!o.train.save.empty())
      if (Status st = recoverCheckpointDir(o.train.save, true); !st)
        return s.fail(st.message());
  }
  if (s.worldSize > 1)
    if (Status st = s.session.comm()->barrier(); !st)
      return s.fail(st.message());
  return 0;
}

/// --resume: every rank loads its states, and the losses before it when the
/// checkpoint has them all.
int resume(RankState &s) {
  const RunOptions &o = s.o;
  if (o.train.resume.empty())
    return 0;
  if (Status st = readCheckpointInfo(o.train.resume, s.start); !st)
    return s.fail("--resume " + o.train.resume + ": " + st.message());
  if (!o.train.eval && o.train.steps <= s.start.step)
    return s.fail("--steps " + std::to_string(o.train.steps) +
                  " is not above the checkpoint's step " +
                  std::to_string(s.start.step) + " (" + o.train.resume +
                  "): --steps is the step to stop at, counted from the start "
                  "of the training");
  // A pipeline's ranks hold different states (each stage its own): the
  // checkpoint holds more than this rank's program.
  bool pipelined = false;
  for (const auto &[axis, size] : s.artifact->mesh())
    pipelined |= axis == "pp" && size > 1;
  if (Status st = loadCheckpoint(*s.exec, o.train.resume, s.rank, s.worldSize,
                                 pipelined);
      !st)
    return s.fail(st.message());
  bool found = false;
  if (Status st = readCheckpointLosses(o.train.resume, s.history, found); !st)
    return s.fail("--resume " + o.train.resume + ": " + st.message());
  s.historyComplete =
      found && static_cast<int64_t>(s.history.size()) == s.start.step;
  return 0;
}

// --- bindInputs ---------------------------------------------------------===//

/// One --input NAME=FILE (NAME empty: the program's only input), checked
/// and bound; `bound` says which inputs have their value already.
int bindInput(RankState &s, std::vector<bool> &bound, std::string name,
              const std::string &file) {
  const Program &program = *s.program;
  if (name.empty()) {
    if (program.inputs.size() != 1)
      return s.fail("--input " + file + " has no NAME=; the program has " +
                    std::to_string(program.inputs.size()) +
                    " inputs, so each needs its name");
    name = program.inputs[0].first;
  }
  int idx = -1;
  for (size_t i = 0; i < program.inputs.size(); ++i)
    if (program.inputs[i].first == name)
      idx = static_cast<int>(i);
  if (idx >= 0 && bound[idx])
    return s.fail("input '" + name + "' is given twice" +
                  (s.feeds.feeds(name) ? " (by --input and a data file)" : ""));
  Tensor t;
  if (Status st = readNpy(file, t); !st)
    return s.fail("input '" + name + "': " + st.message());
  const std::string what = "--input " + name + "=" + file;
  if (s.hasTraining && name == s.training.labels_input())
    if (Status st = checkLabels(s.training, t, what); !st)
      return s.fail(st.message());
  if (Status st = checkGatherIndices(program, name, t, what); !st)
    return s.fail(st.message());
  if (Status st = s.exec->setInput(name, t); !st)
    return s.fail(st.message() + " (from " + file + ")");
  bound[idx] = true;
  return 0;
}

// --- eval and grads -----------------------------------------------------===//

/// The training's parameters into another program's executor (the
/// gradient or evaluation program): as they are on one rank; on several
/// through a temporary checkpoint in `dir`, as the programs may shard a
/// parameter differently.
std::function<Status(Executor &)> fillFrom(RankState &s,
                                           const std::string &dir) {
  return [&s, dir](Executor &other) -> Status {
    if (s.worldSize == 1)
      return copyStates(*s.exec, other);
    CheckpointInfo info = s.start;
    // Removed before any rank writes into it.
    if (s.rank == 0)
      TSL_RETURN_IF_ERROR(removeCheckpointDir(dir));
    TSL_RETURN_IF_ERROR(s.session.comm()->barrier());
    TSL_RETURN_IF_ERROR(saveCheckpoint(*s.exec, dir, info, s.group));
    Status st = loadCheckpoint(other, dir, s.rank, s.worldSize,
                               /*subset=*/true);
    TSL_RETURN_IF_ERROR(s.session.comm()->barrier());
    if (s.rank == 0)
      TSL_RETURN_IF_ERROR(removeCheckpointDir(dir));
    return st;
  };
}

/// The loss on held-out data `data` at step `step`: a line, and a --metrics
/// record when `metrics` is open.
Status evalLine(RankState &s, const std::string &data, const std::string &what,
                int64_t step, std::FILE *metrics) {
  EvalResult r;
  TSL_RETURN_IF_ERROR(evaluate(s.o.artifact, data, what, s.o.backend, s.eo,
                               s.rank, s.hasTraining ? &s.training : nullptr,
                               fillFrom(s, s.o.artifact + ".eval-states"), r));
  if (!s.writesOutputs())
    return Status::ok();
  s.out.print("tessel-run: eval loss %.6f ppl %.4f (%lld batches, step "
              "%lld)\n",
              r.loss, std::exp(r.loss), static_cast<long long>(r.batches),
              static_cast<long long>(step));
  s.out.flush();
  if (metrics) {
    std::fprintf(metrics,
                 "{\"step\": %lld, \"eval_loss\": %.9g, \"eval_ppl\": "
                 "%.9g, \"eval_batches\": %lld}\n",
                 static_cast<long long>(step), r.loss, std::exp(r.loss),
                 static_cast<long long>(r.batches));
    std::fflush(metrics);
  }
  return Status::ok();
}

// --- train --------------------------------------------------------------===//

/// --eval-data-lm: the evaluation's program and data, checked before step 1.
int checkEvalData(RankState &s) {
  const RunOptions &o = s.o;
  if (o.train.evalDataLm.empty())
    return 0;
  const std::string what = "--eval-data-lm " + o.train.evalDataLm;
  std::unique_ptr<Artifact> evalArtifact;
  if (Status st = openEvalArtifact(o.artifact, evalArtifact); !st)
    return s.fail(what + ": " + st.message());
  StepFeeds probe;
  if (s.hasTraining)
    probe.checkLabelsOf(&s.training);
  TrainOptions vo;
  vo.dataLm = o.train.evalDataLm;
  if (Status st = probe.load(vo, *s.program); !st)
    return s.fail(what + ": " + st.message());
  return 0;
}

/// Past a schedule's end the rate stays at its last value (a cosine's is
/// 0): PyTorch's LambdaLR would go on computing the formula. A warning.
void warnPastSchedule(const RankState &s) {
  const RunOptions &o = s.o;
  const tessel::artifact::TrainingInfo &t = s.training;
  if (!s.reports() || t.lr_schedule() == "constant" ||
      t.lr_schedule().empty() || t.total_steps() <= 0 ||
      o.train.steps <= t.total_steps())
    return;
  s.out.note("tessel-run: warning: --steps %d runs past the artifact's "
             "--total-steps %lld: steps %lld to %d keep the %s "
             "schedule's last rate, %.6g (recompile with --total-steps "
             "%d for a schedule over the whole run)\n",
             o.train.steps, static_cast<long long>(t.total_steps()),
             static_cast<long long>(t.total_steps() + 1), o.train.steps,
             t.lr_schedule().c_str(),
             scheduledLearningRate(t, t.total_steps()).value_or(0.0),
             o.train.steps);
}

/// After step `step` (`dataPosition` the next): the checkpoint and the
/// evaluation when due.
Status afterStep(RankRun &run, RankState &s, int64_t step,
                 int64_t dataPosition) {
  const RunOptions &o = s.o;
  s.bubble.add(s.exec->lastRunStats());
  Status saved = Status::ok();
  if (o.train.saveEvery && step % o.train.saveEvery == 0)
    saved = run.saveCheckpoint(step, dataPosition);
  if (saved && !o.train.evalDataLm.empty() &&
      ((o.train.evalEvery && step % o.train.evalEvery == 0) ||
       step == o.train.steps))
    saved = evalLine(s, o.train.evalDataLm,
                     "--eval-data-lm " + o.train.evalDataLm, step, s.metrics);
  testStepHook(s.rank, step);
  return saved;
}

/// After the last step: its checkpoint (unless the last save was of it),
/// the peak RSS of every rank, and the --export-onnx model.
int afterTraining(RankRun &run, RankState &s) {
  const RunOptions &o = s.o;
  const int64_t dataPosition = s.start.dataPosition + o.train.steps -
                               s.start.step;
  if (!o.train.save.empty() && s.lastSaved != o.train.steps)
    if (Status st = run.saveCheckpoint(o.train.steps, dataPosition); !st)
      return s.fail(st.message());
  s.times = s.steps.ms;
  // The measured peak of every rank, reported by the one that reports.
  if (Status st = reportPeakRss(s.session.comm(), s.rank, s.worldSize,
                                s.reports());
      !st)
    return s.fail(st.message());
  const bool writes = !o.train.exportOnnx.empty() || !o.train.saveWeights.empty();
  if (writes && o.train.save.empty())
    if (Status st = s.numerics.checkStates(
            *s.exec, o.train.steps,
            o.train.exportOnnx.empty() ? "--save-weights " + o.train.saveWeights
                                       : "--export-onnx " + o.train.exportOnnx);
        !st)
      return s.fail(st.message());
  if (writes)
    if (Status st = writeTrained(s, o.train.steps, dataPosition); !st)
      return s.fail(st.message());
  return 0;
}

// --- finish -------------------------------------------------------------===//

/// The trace and the timeline of this rank's last run, and a pipeline's
/// bubble line.
int writeRankTrace(RankState &s) {
  const RunOptions &o = s.o;
  if (!o.trace.empty()) {
    std::string path =
        s.worldSize > 1 ? rankTracePath(o.trace, s.rank) : o.trace;
    if (Status st = writeTrace(path, s.rank, *s.program, s.exec->lastTrace());
        !st)
      return s.fail(st.message());
  }
  if (!o.timeline.empty())
    if (Status st = writeTimelineSpans(o.timeline, s.rank, *s.program,
                                       s.exec->lastTrace(), s.bubble);
        !st)
      return s.fail(st.message());
  if (s.program->pipelined) {
    s.out.print("tessel-run: rank %d: %s\n", s.rank,
                s.bubble.describe(o.train.steps ? "step" : "run").c_str());
    s.out.flush();
  }
  return 0;
}

/// The timing line: "tessel-run: ART rank 0 of 2 on cpu (shm), 1 thread:
/// 1.234 ms per run (one run, no warm-up)".
void reportTiming(RankState &s) {
  const RunOptions &o = s.o;
  std::vector<double> &times = s.times;
  std::sort(times.begin(), times.end());
  double median = times.size() % 2
                      ? times[times.size() / 2]
                      : 0.5 * (times[times.size() / 2 - 1] +
                               times[times.size() / 2]);
  // "rank 0 of 2 on cpu (shm)": the communicator's backend too.
  std::string ranks =
      s.worldSize > 1 ? " of " + std::to_string(s.worldSize) : "";
  std::string over = s.worldSize > 1 && s.session.comm()
                         ? std::string(" (") + s.session.comm()->backend() + ")"
                         : "";
  std::string of =
      o.train.steps  ? "median of " + std::to_string(times.size())
      : o.repeatGiven ? "median of " + std::to_string(times.size()) +
                            " runs after 1 untimed warm-up"
                      : "one run, no warm-up";
  // The launcher's binding (Launch.h), if any.
  const char *cores = std::getenv("TESSEL_CORES");
  const std::string onCores =
      cores && *cores ? std::string(", cores ") + cores : std::string();
  s.out.print("tessel-run: %s rank %d%s on %s%s, %d thread%s%s: %.3f ms per "
              "%s (%s)\n",
              o.artifact.c_str(), s.rank, ranks.c_str(), s.exec->backend(),
              over.c_str(), o.threads, o.threads == 1 ? "" : "s",
              onCores.c_str(), median, o.train.steps ? "step" : "run",
              of.c_str());
}

/// The steps of train(), --metrics open: on a failure, the exit status
/// (a group that lost a rank can restart from its checkpoint).
int trainSteps(RankRun &run, RankState &s, const StepLog &log) {
  const RunOptions &o = s.o;
  std::function<Status(int64_t, int64_t)> after =
      [&run, &s](int64_t step, int64_t dataPosition) {
        return afterStep(run, s, step, dataPosition);
      };
  if (Status st = runSteps(*s.exec, s.feeds, s.start.step, o.train.steps,
                           s.start.dataPosition, s.reports(),
                           s.reports() && !o.train.losses.empty(), s.numerics,
                           s.steps, after, log);
      !st) {
    int rc = s.fail(st.message());
    // A rank that died is worth a restart from the checkpoint; a training
    // that went non-finite (every rank agreed on it) is not.
    bool nonFinite =
        st.message().find("the training stops") != std::string::npos;
    if (s.worldSize > 1 && !o.train.save.empty() && !nonFinite)
      return restartable(s.out, o.train.save);
    return rc;
  }
  return afterTraining(run, s);
}

} // namespace

RankRun::RankRun(const RunOptions &o, RunReporter &reporter)
    : s(std::make_unique<RankState>(o, reporter)) {}

RankRun::~RankRun() {
  // The reporter outlives the session whose communicator it names.
  if (s->out.comm == s->session.comm())
    s->out.comm = nullptr;
}

Executor *RankRun::executor() const { return s->exec.get(); }

int RankRun::open(const WorldInfo &w) {
  if (int rc = openArtifact(*s, w))
    return rc;
  if (int rc = checkFiles(*s))
    return rc;
  return createRankExecutor(*s);
}

int RankRun::prepare() {
  RankState &st = *s;
  if (int rc = readTraining(st))
    return rc;
  if (st.hasTraining)
    st.feeds.checkLabelsOf(&st.training);
  if (Status e = st.feeds.load(st.o.train, *st.program); !e)
    return st.fail(e.message());
  st.group.rank = st.rank;
  st.group.size = st.worldSize;
  st.group.comm = st.session.comm();
  st.group.store = st.session.kvStore();
  st.group.timeout = std::chrono::seconds(st.o.timeout);
  st.start.ranks = st.worldSize;
  if (int rc = recoverCheckpoints(st))
    return rc;
  return resume(st);
}

int RankRun::bindInputs() {
  RankState &st = *s;
  const Program &program = *st.program;
  std::vector<bool> bound(program.inputs.size(), false);
  for (size_t i = 0; i < bound.size(); ++i)
    bound[i] = st.feeds.feeds(program.inputs[i].first);
  for (const auto &[name, file] : st.o.inputs)
    if (int rc = bindInput(st, bound, name, file))
      return rc;
  for (size_t i = 0; i < bound.size(); ++i)
    if (!bound[i]) {
      const BufferInfo &b = program.buffers[program.inputs[i].second];
      return st.fail("missing input '" + program.inputs[i].first + "' (" +
                     dtypeName(b.dtype) + " " + shapeToString(b.shape) +
                     "); pass --input " + program.inputs[i].first +
                     "=FILE.npy" +
                     (st.o.train.steps ? " or --data " +
                                             program.inputs[i].first +
                                             "=FILE.npy"
                                       : ""));
    }
  return 0;
}

int RankRun::startTogether() {
  if (s->worldSize > 1) {
    if (Status e = s->session.comm()->barrier(); !e)
      return s->fail(e.message());
    testHooks(s->rank);
  }
  return 0;
}

int RankRun::eval() {
  if (Status e = evalLine(*s, s->o.train.dataLm, "--eval", s->start.step,
                          nullptr);
      !e)
    return s->fail(e.message());
  return 0;
}

int RankRun::grads() {
  RankState &st = *s;
  const RunOptions &o = st.o;
  if (o.train.grads.empty())
    return 0;
  // The training's parameters into the gradient program's executor.
  auto fill = fillFrom(st, o.train.grads + ".states");
  if (Status e = writeGradients(o.artifact, st.feeds, st.start.dataPosition,
                                o.backend, st.eo, st.rank, o.train.grads,
                                fill);
      !e)
    return st.fail(e.message());
  return 0;
}

Status RankRun::saveCheckpoint(int64_t step, int64_t dataPosition) {
  RankState &st = *s;
  const RunOptions &o = st.o;
  TSL_RETURN_IF_ERROR(st.numerics.checkStates(
      *st.exec, step,
      "the checkpoint of step " + std::to_string(step) + " (--save " +
          o.train.save + ")"));
  CheckpointInfo info;
  info.step = step;
  info.dataPosition = dataPosition;
  info.ranks = st.worldSize;
  std::vector<float> allLosses;
  if (st.rank == st.lossRank && st.historyComplete) {
    allLosses = st.history;
    allLosses.insert(allLosses.end(), st.steps.losses.begin(),
                     st.steps.losses.end());
    info.losses = &allLosses;
  }
  if (Status e = tooling::saveCheckpoint(*st.exec, o.train.save, info,
                                         st.group);
      !e)
    return Status::error("--save " + o.train.save + ": " + e.message());
  st.lastSaved = step;
  if (st.reports()) {
    const size_t states = st.program->states.size();
    st.out.print("tessel-run: checkpoint of step %lld (%zu state%s, %d "
                 "rank%s) -> %s\n",
                 static_cast<long long>(step), states,
                 states == 1 ? "" : "s", st.worldSize,
                 st.worldSize == 1 ? "" : "s", o.train.save.c_str());
    st.out.flush();
  }
  return Status::ok();
}

int RankRun::train() {
  RankState &st = *s;
  const RunOptions &o = st.o;
  st.exec->setTracing(!o.trace.empty() || !o.timeline.empty());
  if (int rc = checkEvalData(st))
    return rc;
  StepLog log;
  log.logEvery = o.train.logEvery;
  if (st.training.optimizer().size())
    log.training = &st.training;
  std::unique_ptr<std::FILE, int (*)(std::FILE *)> metrics(nullptr,
                                                           &std::fclose);
  if (st.reports() && !o.train.metrics.empty()) {
    // A resumed run goes on with the log it had; a fresh one starts it.
    metrics.reset(std::fopen(o.train.metrics.c_str(),
                             o.train.resume.empty() ? "w" : "a"));
    if (!metrics)
      return st.fail("--metrics " + o.train.metrics + ": cannot open for "
                     "writing: " + std::strerror(errno));
    log.metrics = metrics.get();
  }
  st.metrics = log.metrics;
  warnPastSchedule(st);
  int rc = trainSteps(*this, st, log);
  st.metrics = nullptr;
  return rc;
}

int RankRun::infer() {
  RankState &st = *s;
  const RunOptions &o = st.o;
  st.exec->setTracing(!o.trace.empty() || !o.timeline.empty());
  // --repeat K: one untimed warm-up, then K timed runs.
  int runs = o.repeatGiven ? o.repeat + 1 : 1;
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    if (Status e = st.exec->run(); !e) {
      std::string found = st.numerics.finding(*st.exec, r + 1, 0);
      return st.fail(found.empty() ? e.message()
                                   : found + "; then: " + e.message());
    }
    auto t1 = std::chrono::steady_clock::now();
    if (Status e = st.numerics.afterStep(*st.exec, r + 1, 0, nullptr); !e)
      return st.fail(e.message());
    if (!o.repeatGiven || r > 0) {
      st.times.push_back(
          std::chrono::duration<double, std::milli>(t1 - t0).count());
      st.bubble.add(st.exec->lastRunStats());
    }
  }
  return 0;
}

int RankRun::finish() {
  RankState &st = *s;
  const RunOptions &o = st.o;
  if (int rc = writeRankTrace(st))
    return rc;
  if (st.rank != 0 && st.worldSize > 1) {
    // Outputs are replicated; rank 0 writes them. The losses: lossRank.
    if (st.rank == st.lossRank && !o.train.losses.empty())
      if (int rc = writeLosses(st, lossesToWrite(st)))
        return rc;
    if (Status e = st.session.finish(); !e)
      return st.fail(e.message());
    return 0;
  }
  reportTiming(st);
  for (const auto &[name, file] : st.outputs) {
    Tensor t;
    if (Status e = st.exec->getOutput(name, t); !e)
      return st.fail(e.message());
    if (Status e = writeNpy(file, t); !e)
      return st.fail("output '" + name + "': " + e.message());
    st.out.print("tessel-run: output '%s' %s %s -> %s\n", name.c_str(),
                 dtypeName(t.dtype()), shapeToString(t.shape()).c_str(),
                 file.c_str());
  }
  if (!o.train.losses.empty() && st.reports())
    if (int rc = writeLosses(st, lossesToWrite(st)))
      return rc;
  st.out.flush();
  if (Status e = st.session.finish(); !e)
    return st.fail(e.message());
  if (!o.timeline.empty() && st.worldSize == 1) {
    if (Status e = mergeTimeline(o.timeline, 1, o.artifact + ": 1 rank"); !e)
      return st.fail(e.message());
    st.out.print("tessel-run: timeline -> %s\n", o.timeline.c_str());
  }
  return 0;
}

int runRank(const RunOptions &o, const WorldInfo &w, RunReporter &reporter) {
  RankRun run(o, reporter);
  if (int rc = run.open(w))
    return rc;
  if (int rc = run.prepare())
    return rc;
  if (int rc = run.bindInputs())
    return rc;
  if (int rc = run.startTogether())
    return rc;
  if (o.train.eval)
    return run.eval();
  if (int rc = run.grads())
    return rc;
  if (int rc = o.train.steps ? run.train() : run.infer())
    return rc;
  return run.finish();
}

} // namespace tessel::tooling
