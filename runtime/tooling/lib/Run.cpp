//===- Run.cpp - Running an artifact: what tessel-run does ----------------===//
#include "tessel/tooling/Run.h"

#include "tessel/tooling/Checkpoint.h"
#include "tessel/tooling/Eval.h"
#include "tessel/tooling/Grads.h"
#include "tessel/tooling/Launch.h"
#include "tessel/tooling/Numerics.h"
#include "tessel/tooling/OnnxExport.h"
#include "tessel/tooling/Pipeline.h"
#include "tessel/tooling/Trace.h"
#include "tessel/tooling/TrainingInfo.h"
#include "tessel/ExtensionHost/Host.h"
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

int usageError(const std::string &msg) {
  std::fprintf(stderr, "tessel-run: %s (see tessel-run --help)\n",
               msg.c_str());
  return 2;
}

namespace {

/// "rank K: " in a world of several ranks.
std::string gRankPrefix;
/// The world communicator of a multi-rank run: its hang finder's report
/// follows an error.
Communicator *gComm = nullptr;

/// Names a group of world ranks by the mesh axes along which its members
/// differ ("dp", "dp,tp"), the mesh's first axis major; "" when the group
/// is no such line or plane.
std::function<std::string(const std::vector<int> &)>
meshGroupNamer(std::vector<std::pair<std::string, int64_t>> mesh) {
  return [mesh](const std::vector<int> &group) -> std::string {
    if (mesh.empty() || group.empty())
      return "";
    auto coords = [&](int r) {
      std::vector<int64_t> c(mesh.size());
      for (size_t a = mesh.size(); a-- > 0;) {
        c[a] = r % mesh[a].second;
        r = static_cast<int>(r / mesh[a].second);
      }
      return c;
    };
    std::vector<int64_t> first = coords(group[0]);
    std::vector<bool> varies(mesh.size(), false);
    for (int r : group) {
      std::vector<int64_t> c = coords(r);
      for (size_t a = 0; a < mesh.size(); ++a)
        varies[a] = varies[a] || c[a] != first[a];
    }
    std::string name;
    int64_t count = 1;
    for (size_t a = 0; a < mesh.size(); ++a)
      if (varies[a]) {
        name += (name.empty() ? "" : ",") + mesh[a].first;
        count *= mesh[a].second;
      }
    return count == static_cast<int64_t>(group.size()) ? name : "";
  };
}

int fail(const std::string &msg) {
  std::fprintf(stderr, "tessel-run: %serror: %s\n", gRankPrefix.c_str(),
               msg.c_str());
  for (const std::string &line : opLogReport(gComm))
    std::fprintf(stderr, "tessel-run: %s%s\n", gRankPrefix.c_str(),
                 line.c_str());
  return 1;
}

/// The artifact must be compiled for as many ranks as were started (a
/// single process may still run one rank's program with --rank).
int checkRanks(const RunOptions &o, const Artifact &artifact, int started,
               const std::string &how) {
  int compiled = artifact.numRanks();
  if (compiled == started || (started == 1 && o.rankGiven))
    return 0;
  return fail(o.artifact + " was compiled for " + std::to_string(compiled) +
              " rank" + (compiled == 1 ? "" : "s") + ", but " +
              std::to_string(started) + (started == 1 ? " was" : " were") +
              " started (" + how + ")" +
              (started == 1 ? "; run it with -n " + std::to_string(compiled)
                            : ""));
}

/// The (name, file) of every --output: NAME=FILE when NAME is one of the
/// program's outputs, otherwise the whole value is the file of the first
/// output (so a path with '=' in it works).
int resolveOutputs(const RunOptions &o, const Program &program,
                   std::vector<std::pair<std::string, std::string>> &out) {
  for (const std::string &spec : o.outputs) {
    size_t eq = spec.find('=');
    if (eq != std::string::npos &&
        program.findOutput(spec.substr(0, eq)) >= 0) {
      if (eq + 1 == spec.size())
        return usageError("--output " + spec + " needs a file after '='");
      out.emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
      continue;
    }
    if (program.outputs.empty())
      return fail("--output " + spec + ": the program has no outputs");
    out.emplace_back(program.outputs[0].first, spec);
  }
  return 0;
}

/// --losses: the losses of the steps this run executed.
int writeLosses(const RunOptions &o, const std::vector<float> &losses) {
  Tensor t = Tensor::fromVector(DType::F32,
                                {static_cast<int64_t>(losses.size())}, losses);
  if (Status s = writeNpy(o.train.losses, t); !s)
    return fail("--losses: " + s.message());
  std::printf("tessel-run: losses f32 [%zu] -> %s\n", losses.size(),
              o.train.losses.c_str());
  std::fflush(stdout);
  return 0;
}

/// The exit status of a rank whose group cannot go on (a peer died, hung or
/// was cut off) in a training that saves checkpoints: a job script (srun,
/// mpirun) restarts the job with --resume when it sees it.
constexpr int kRestartable = 75; // EX_TEMPFAIL

int restartable(const std::string &saveDir) {
  CheckpointInfo info;
  std::string from =
      readCheckpointInfo(saveDir, info)
          ? "the checkpoint of step " + std::to_string(info.step) + " in " +
                saveDir + " (rerun with --resume " + saveDir + ")"
          : "the start (no checkpoint in " + saveDir + " yet)";
  std::fprintf(stderr,
               "tessel-run: %srestartable: the training stopped with its "
               "group; it can restart from %s; exit status %d\n",
               gRankPrefix.c_str(), from.c_str(), kRestartable);
  return kRestartable;
}

/// --export-onnx: the states of the last step, put together on rank 0 from
/// the checkpoint --save wrote (or a temporary one beside the output).
Status exportTrained(const RunOptions &o, Executor &exec,
                     CheckpointGroup &group,
                     const tessel::artifact::TrainingInfo &training,
                     int worldSize, int64_t step, int64_t dataPosition) {
  std::string dir = o.train.save;
  const bool temporary = dir.empty();
  if (temporary) {
    dir = o.train.exportOnnx + ".states";
    CheckpointInfo info;
    info.step = step;
    info.dataPosition = dataPosition;
    info.ranks = worldSize;
    if (group.rank == 0)
      TSL_RETURN_IF_ERROR(removeCheckpointDir(dir));
    TSL_RETURN_IF_ERROR(saveCheckpoint(exec, dir, info, group));
  }
  Status result = Status::ok();
  if (group.rank == 0) {
    SavedStates saved;
    result = saved.read(dir);
    if (result)
      result = exportOnnx(o.artifact, training, saved,
                                       o.train.exportOnnx);
    if (temporary)
      if (Status s = removeCheckpointDir(dir); !s && result)
        result = s;
    if (result)
      std::printf("tessel-run: trained model (%d tensors) -> %s\n",
                  training.tensors_size(), o.train.exportOnnx.c_str());
  }
  if (worldSize > 1)
    TSL_RETURN_IF_ERROR(group.comm->barrier());
  return result;
}

int runMain(const RunOptions &o, const WorldInfo &w) {
  std::unique_ptr<Artifact> artifact;
  LoadOptions lo;
  lo.verifyChecksums = o.verify;
  if (Status s = Artifact::open(o.artifact, artifact, lo); !s)
    return fail(s.message());
  if (Status s = checkRequiredPlugins(artifact->manifest()); !s)
    return fail(s.message());
  int worldSize = w.fromEnv ? w.size : 1;
  std::string how = w.fromEnv ? w.source + " says " + std::to_string(w.size)
                    : o.ranks ? "-n " + std::to_string(o.ranks)
                              : "no -n";
  if (w.fromEnv && o.ranks && o.ranks != w.size)
    return fail("-n " + std::to_string(o.ranks) + " but " + how);
  if (int rc = checkRanks(o, *artifact, worldSize, how))
    return rc;
  if (worldSize > 1 && o.rankGiven)
    return usageError("--rank cannot be combined with a world of " +
                      std::to_string(worldSize) + " ranks");
  int rank = worldSize > 1 ? w.rank : o.rank;
  RankSession session;
  if (worldSize > 1) {
    RankSession::SessionOptions so;
    so.timeout = std::chrono::seconds(o.timeout);
    so.backend = o.backend;
    so.verbose = o.verbose;
    so.log.check = o.checkCollectives;
    so.log.groupName = meshGroupNamer(artifact->mesh());
    Status s = session.start(w, so);
    gComm = session.comm();
    if (!s)
      return fail(s.message());
  }
  std::shared_ptr<const Program> program;
  if (Status s = artifact->loadProgram(rank, program); !s)
    return fail(s.message());

  // Every file this rank will write, checked before any work: rank 0 writes
  // the outputs, losses, gradients and the trained model; every rank its
  // trace.
  std::vector<std::pair<std::string, std::string>> outputs;
  if (int rc = resolveOutputs(o, *program, outputs))
    return rc;
  {
    std::vector<std::pair<std::string, std::string>> files; // flag, path
    if (rank == 0 || worldSize == 1) {
      for (const auto &[name, file] : outputs)
        files.emplace_back("--output", file);
      if (!o.train.losses.empty())
        files.emplace_back("--losses", o.train.losses);
      if (!o.train.exportOnnx.empty())
        files.emplace_back("--export-onnx", o.train.exportOnnx);
      if (!o.train.grads.empty())
        files.emplace_back("--grads", o.train.grads);
    }
    if (!o.trace.empty())
      files.emplace_back("--trace", worldSize > 1 ? rankTracePath(
                                                        o.trace, rank)
                                                  : o.trace);
    if (!o.timeline.empty()) {
      if (!program->pipelined)
        return fail("--timeline " + o.timeline + ": rank " +
                    std::to_string(rank) + "'s program is not pipelined (no "
                    "instruction carries a schedule action; compile with "
                    "tesselc --mesh pp=N --schedule S)");
      files.emplace_back("--timeline",
                         rankTracePath(o.timeline, rank));
    }
    for (const auto &[flag, file] : files)
      if (Status s = checkWritable(flag, file); !s)
        return fail(s.message());
  }
  std::unique_ptr<Executor> exec;
  ExecutorOptions eo;
  eo.threads = o.threads;
  eo.comm = session.comm();
  eo.overlap = o.overlap;
  if (Status s = createExecutor(o.backend, program, eo, exec); !s)
    return fail(s.message());
  NumericsGuard numerics;
  numerics.comm = session.comm();
  numerics.rank = rank;
  numerics.worldSize = worldSize;
  numerics.instructions = o.checkNumerics;
  if (o.checkNumerics && !exec->setCheckNumerics(true))
    return fail(std::string("--check-numerics: the ") + exec->backend() +
                " backend cannot check instructions; run with --device cpu");

  // What tesselc --train says beyond the program: the labels' range, the
  // source model of --export-onnx.
  tessel::artifact::TrainingInfo training;
  bool hasTraining = false;
  if (Status s = readTrainingInfo(o.artifact, training,
                                               hasTraining);
      !s)
    return fail(s.message());
  const int lossRank = hasTraining ? training.loss_rank() : 0;
  if (!o.train.exportOnnx.empty() &&
      (!hasTraining || training.source_model().empty()))
    return fail("--export-onnx " + o.train.exportOnnx + ": " + o.artifact +
                " has no source model to write the trained tensors into "
                "(compile it with tesselc --train from an ONNX model)");
  if (!o.train.exportOnnx.empty() && (rank == 0 || worldSize == 1)) {
    // The source model checked against the manifest now, not after the
    // training.
    std::shared_ptr<MappedFile> source;
    bool present = false;
    if (Status s = openArtifactFile(o.artifact, training.source_model(),
                                    source, present);
        !s)
      return fail("--export-onnx " + o.train.exportOnnx + ": " + s.message());
    if (!present)
      return fail("--export-onnx " + o.train.exportOnnx + ": " + o.artifact +
                  "/" + training.source_model() +
                  ": missing from the artifact");
  }

  // Per-step data (--data, --data-lm), checked against the inputs.
  StepFeeds feeds;
  if (hasTraining)
    feeds.checkLabelsOf(&training);
  if (Status s = feeds.load(o.train, *program); !s)
    return fail(s.message());

  // Checkpoints: rank 0 tidies up after a killed save, then every rank
  // loads its states from --resume.
  CheckpointGroup group;
  group.rank = rank;
  group.size = worldSize;
  group.comm = session.comm();
  group.store = session.kvStore();
  group.timeout = std::chrono::seconds(o.timeout);
  CheckpointInfo start;
  start.ranks = worldSize;
  // Every step's loss before this run's (from --resume's losses.npy):
  // saved with each checkpoint, and written by --losses after a restart.
  std::vector<float> history;
  bool historyComplete = true;
  if (!o.train.resume.empty() || !o.train.save.empty()) {
    if (rank == 0) {
      if (!o.train.resume.empty())
        if (Status s = recoverCheckpointDir(o.train.resume, false);
            !s)
          return fail(s.message());
      if (!o.train.save.empty())
        if (Status s = recoverCheckpointDir(o.train.save, true);
            !s)
          return fail(s.message());
    }
    if (worldSize > 1)
      if (Status s = session.comm()->barrier(); !s)
        return fail(s.message());
  }
  if (!o.train.resume.empty()) {
    if (Status s = readCheckpointInfo(o.train.resume, start); !s)
      return fail("--resume " + o.train.resume + ": " + s.message());
    if (!o.train.eval && o.train.steps <= start.step)
      return fail("--steps " + std::to_string(o.train.steps) +
                  " is not above the checkpoint's step " +
                  std::to_string(start.step) + " (" + o.train.resume +
                  "): --steps is the step to stop at, counted from the start "
                  "of the training");
    // A pipeline's ranks hold different states (each stage its own): the
    // checkpoint holds more than this rank's program.
    bool pipelined = false;
    for (const auto &[axis, size] : artifact->mesh())
      pipelined |= axis == "pp" && size > 1;
    if (Status s = loadCheckpoint(*exec, o.train.resume, rank,
                                               worldSize, pipelined);
        !s)
      return fail(s.message());
    // The losses before it, when it has them all.
    bool found = false;
    if (Status s = readCheckpointLosses(o.train.resume, history,
                                                     found);
        !s)
      return fail("--resume " + o.train.resume + ": " + s.message());
    historyComplete =
        found && static_cast<int64_t>(history.size()) == start.step;
  }

  // Inputs: every one bound exactly once, with the right dtype and shape.
  std::vector<bool> bound(program->inputs.size(), false);
  for (size_t i = 0; i < bound.size(); ++i)
    bound[i] = feeds.feeds(program->inputs[i].first);
  for (const auto &[nameArg, file] : o.inputs) {
    std::string name = nameArg;
    if (name.empty()) {
      if (program->inputs.size() != 1)
        return fail("--input " + file +
                    " has no NAME=; the program has " +
                    std::to_string(program->inputs.size()) +
                    " inputs, so each needs its name");
      name = program->inputs[0].first;
    }
    int idx = -1;
    for (size_t i = 0; i < program->inputs.size(); ++i)
      if (program->inputs[i].first == name)
        idx = static_cast<int>(i);
    if (idx >= 0 && bound[idx])
      return fail("input '" + name + "' is given twice" +
                  (feeds.feeds(name) ? " (by --input and a data file)" : ""));
    Tensor t;
    if (Status s = readNpy(file, t); !s)
      return fail("input '" + name + "': " + s.message());
    if (hasTraining && name == training.labels_input())
      if (Status s = checkLabels(training, t, "--input " + name +
                                                               "=" + file);
          !s)
        return fail(s.message());
    if (Status s = checkGatherIndices(*program, name, t,
                                                   "--input " + name + "=" +
                                                       file);
        !s)
      return fail(s.message());
    if (Status s = exec->setInput(name, t); !s)
      return fail(s.message() + " (from " + file + ")");
    bound[idx] = true;
  }
  for (size_t i = 0; i < bound.size(); ++i)
    if (!bound[i]) {
      const BufferInfo &b = program->buffers[program->inputs[i].second];
      return fail("missing input '" + program->inputs[i].first + "' (" +
                  dtypeName(b.dtype) + " " + shapeToString(b.shape) +
                  "); pass --input " + program->inputs[i].first + "=FILE.npy" +
                  (o.train.steps ? " or --data " + program->inputs[i].first +
                                       "=FILE.npy"
                                 : ""));
    }

  // Run: a warm-up when repeating, then K timed runs, every rank starting
  // together.
  if (worldSize > 1) {
    if (Status s = session.comm()->barrier(); !s)
      return fail(s.message());
    testHooks(rank);
  }
  // The training's parameters into another program's executor (the
  // gradient or evaluation program): as they are on one rank; on several
  // through a temporary checkpoint, as the programs may shard a parameter
  // differently.
  auto fillFrom = [&](const std::string &dir) {
    return [&, dir](Executor &other) -> Status {
      if (worldSize == 1)
        return copyStates(*exec, other);
      CheckpointInfo info = start;
      // Removed before any rank writes into it.
      if (rank == 0)
        TSL_RETURN_IF_ERROR(removeCheckpointDir(dir));
      TSL_RETURN_IF_ERROR(session.comm()->barrier());
      TSL_RETURN_IF_ERROR(saveCheckpoint(*exec, dir, info, group));
      Status s = loadCheckpoint(other, dir, rank, worldSize,
                                /*subset=*/true);
      TSL_RETURN_IF_ERROR(session.comm()->barrier());
      if (rank == 0)
        TSL_RETURN_IF_ERROR(removeCheckpointDir(dir));
      return s;
    };
  };
  // The loss on held-out data: a line, and a --metrics record.
  auto runEval = [&](const std::string &data, const std::string &what,
                     int64_t step, std::FILE *metrics) -> Status {
    EvalResult r;
    TSL_RETURN_IF_ERROR(evaluate(o.artifact, data, what, o.backend, eo, rank,
                                 hasTraining ? &training : nullptr,
                                 fillFrom(o.artifact + ".eval-states"), r));
    if (rank == 0 || worldSize == 1) {
      std::printf("tessel-run: eval loss %.6f ppl %.4f (%lld batches, step "
                  "%lld)\n",
                  r.loss, std::exp(r.loss), static_cast<long long>(r.batches),
                  static_cast<long long>(step));
      std::fflush(stdout);
      if (metrics) {
        std::fprintf(metrics,
                     "{\"step\": %lld, \"eval_loss\": %.9g, \"eval_ppl\": "
                     "%.9g, \"eval_batches\": %lld}\n",
                     static_cast<long long>(step), r.loss, std::exp(r.loss),
                     static_cast<long long>(r.batches));
        std::fflush(metrics);
      }
    }
    return Status::ok();
  };
  if (o.train.eval) {
    if (Status s = runEval(o.train.dataLm, "--eval", start.step, nullptr); !s)
      return fail(s.message());
    return 0;
  }
  if (!o.train.grads.empty()) {
    // The training's parameters into the gradient program's executor: as
    // they are on one rank; on several through a temporary checkpoint, as
    // the two programs may shard a parameter differently.
    auto fill = fillFrom(o.train.grads + ".states");
    if (Status s = writeGradients(o.artifact, feeds,
                                               start.dataPosition, o.backend,
                                               eo, rank, o.train.grads, fill);
        !s)
      return fail(s.message());
  }
  exec->setTracing(!o.trace.empty() || !o.timeline.empty());
  std::vector<double> times;
  // Pipelined programs: the time of the timed runs blocked on peers.
  BubbleMeter bubble;
  StepResults steps;
  if (o.train.steps) {
    // Rank 0 reports the steps and collects the losses; a pipelined step's
    // loss is on its last stage's rank (training.pb's loss_rank).
    bool first = rank == lossRank || worldSize == 1;
    int64_t lastSaved = -1;
    std::vector<float> allLosses;
    auto save = [&](int64_t step, int64_t dataPosition) -> Status {
      // Never a checkpoint with a non-finite state: the previous one stays.
      TSL_RETURN_IF_ERROR(numerics.checkStates(
          *exec, step,
          "the checkpoint of step " + std::to_string(step) + " (--save " +
              o.train.save + ")"));
      CheckpointInfo info;
      info.step = step;
      info.dataPosition = dataPosition;
      info.ranks = worldSize;
      if (rank == lossRank && historyComplete) {
        allLosses = history;
        allLosses.insert(allLosses.end(), steps.losses.begin(),
                         steps.losses.end());
        info.losses = &allLosses;
      }
      if (Status s = saveCheckpoint(*exec, o.train.save, info,
                                                 group);
          !s)
        return Status::error("--save " + o.train.save + ": " + s.message());
      lastSaved = step;
      if (first) {
        std::printf("tessel-run: checkpoint of step %lld (%zu state%s, %d "
                    "rank%s) -> %s\n",
                    static_cast<long long>(step), program->states.size(),
                    program->states.size() == 1 ? "" : "s", worldSize,
                    worldSize == 1 ? "" : "s", o.train.save.c_str());
        std::fflush(stdout);
      }
      return Status::ok();
    };
    if (!o.train.evalDataLm.empty()) {
      // The evaluation's program and data checked before step 1.
      const std::string what = "--eval-data-lm " + o.train.evalDataLm;
      std::unique_ptr<Artifact> evalArtifact;
      if (Status s = openEvalArtifact(o.artifact, evalArtifact); !s)
        return fail(what + ": " + s.message());
      StepFeeds probe;
      if (hasTraining)
        probe.checkLabelsOf(&training);
      TrainOptions vo;
      vo.dataLm = o.train.evalDataLm;
      if (Status s = probe.load(vo, *program); !s)
        return fail(what + ": " + s.message());
    }
    std::FILE *metricsFile = nullptr; // --metrics, once opened
    std::function<Status(int64_t, int64_t)> after =
        [&](int64_t step, int64_t dataPosition) -> Status {
      bubble.add(exec->lastRunStats());
      Status saved = Status::ok();
      if (o.train.saveEvery && step % o.train.saveEvery == 0)
        saved = save(step, dataPosition);
      if (saved && !o.train.evalDataLm.empty() &&
          ((o.train.evalEvery && step % o.train.evalEvery == 0) ||
           step == o.train.steps))
        saved = runEval(o.train.evalDataLm, "--eval-data-lm " +
                            o.train.evalDataLm, step, metricsFile);
      testStepHook(rank, step);
      return saved;
    };
    StepLog log;
    log.logEvery = o.train.logEvery;
    if (training.optimizer().size())
      log.training = &training;
    std::unique_ptr<std::FILE, int (*)(std::FILE *)> metrics(nullptr,
                                                             &std::fclose);
    if (first && !o.train.metrics.empty()) {
      // A resumed run goes on with the log it had; a fresh one starts it.
      metrics.reset(std::fopen(o.train.metrics.c_str(),
                               o.train.resume.empty() ? "w" : "a"));
      if (!metrics)
        return fail("--metrics " + o.train.metrics + ": cannot open for "
                    "writing: " + std::strerror(errno));
      log.metrics = metrics.get();
      metricsFile = log.metrics;
    }
    // Past a schedule's end the rate stays at its last value (a cosine's
    // is 0): PyTorch's LambdaLR would go on computing the formula.
    if (first && training.lr_schedule() != "constant" &&
        !training.lr_schedule().empty() && training.total_steps() > 0 &&
        o.train.steps > training.total_steps())
      std::fprintf(stderr,
                   "tessel-run: warning: --steps %d runs past the artifact's "
                   "--total-steps %lld: steps %lld to %d keep the %s "
                   "schedule's last rate, %.6g (recompile with --total-steps "
                   "%d for a schedule over the whole run)\n",
                   o.train.steps,
                   static_cast<long long>(training.total_steps()),
                   static_cast<long long>(training.total_steps() + 1),
                   o.train.steps, training.lr_schedule().c_str(),
                   scheduledLearningRate(training, training.total_steps())
                       .value_or(0.0),
                   o.train.steps);
    if (Status s = runSteps(
            *exec, feeds, start.step, o.train.steps, start.dataPosition, first,
            first && !o.train.losses.empty(), numerics, steps, after, log);
        !s) {
      int rc = fail(s.message());
      // A rank that died is worth a restart from the checkpoint; a training
      // that went non-finite (every rank agreed on it) is not.
      bool nonFinite = s.message().find("the training stops") != std::string::npos;
      if (worldSize > 1 && !o.train.save.empty() && !nonFinite)
        return restartable(o.train.save);
      return rc;
    }
    if (!o.train.save.empty() && lastSaved != o.train.steps)
      if (Status s = save(o.train.steps, start.dataPosition + o.train.steps -
                                             start.step);
          !s)
        return fail(s.message());
    times = steps.ms;
    // The measured peak of every rank, reported by the one that reports.
    if (Status s = reportPeakRss(session.comm(), rank, worldSize,
                                              first);
        !s)
      return fail(s.message());
    if (!o.train.exportOnnx.empty() && o.train.save.empty())
      if (Status s = numerics.checkStates(*exec, o.train.steps,
                                          "--export-onnx " + o.train.exportOnnx);
          !s)
        return fail(s.message());
    if (!o.train.exportOnnx.empty())
      if (Status s = exportTrained(o, *exec, group, training, worldSize,
                                   o.train.steps,
                                   start.dataPosition + o.train.steps -
                                       start.step);
          !s)
        return fail(s.message());
  } else {
    // --repeat K: one untimed warm-up, then K timed runs.
    int runs = o.repeatGiven ? o.repeat + 1 : 1;
    for (int r = 0; r < runs; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      if (Status s = exec->run(); !s) {
        std::string found = numerics.finding(*exec, r + 1, 0);
        return fail(found.empty() ? s.message()
                                  : found + "; then: " + s.message());
      }
      auto t1 = std::chrono::steady_clock::now();
      if (Status s = numerics.afterStep(*exec, r + 1, 0, nullptr); !s)
        return fail(s.message());
      if (!o.repeatGiven || r > 0) {
        times.push_back(
            std::chrono::duration<double, std::milli>(t1 - t0).count());
        bubble.add(exec->lastRunStats());
      }
    }
  }
  // A restarted group (the launcher's --max-restarts) writes every step's
  // loss, those before its checkpoint too.
  auto lossesToWrite = [&] {
    if (!std::getenv("TESSEL_RESTART") || !historyComplete)
      return steps.losses;
    std::vector<float> all = history;
    all.insert(all.end(), steps.losses.begin(), steps.losses.end());
    return all;
  };
  std::sort(times.begin(), times.end());
  double median = times.size() % 2
                      ? times[times.size() / 2]
                      : 0.5 * (times[times.size() / 2 - 1] + times[times.size() / 2]);
  if (!o.trace.empty()) {
    std::string path =
        worldSize > 1 ? rankTracePath(o.trace, rank) : o.trace;
    if (Status s = writeTrace(path, rank, *program, exec->lastTrace());
        !s)
      return fail(s.message());
  }
  if (!o.timeline.empty())
    if (Status s = writeTimelineSpans(
            o.timeline, rank, *program, exec->lastTrace(), bubble);
        !s)
      return fail(s.message());
  if (program->pipelined) {
    std::printf("tessel-run: rank %d: %s\n", rank,
                bubble.describe(o.train.steps ? "step" : "run").c_str());
    std::fflush(stdout);
  }
  if (rank != 0 && worldSize > 1) {
    // Outputs are replicated; rank 0 writes them. The losses: lossRank.
    if (rank == lossRank && !o.train.losses.empty())
      if (int rc = writeLosses(o, lossesToWrite()))
        return rc;
    if (Status s = session.finish(); !s)
      return fail(s.message());
    return 0;
  }
  // "rank 0 of 2 on cpu (shm)": the communicator's backend too.
  std::string ranks = worldSize > 1 ? " of " + std::to_string(worldSize) : "";
  std::string over = worldSize > 1 && session.comm()
                         ? std::string(" (") + session.comm()->backend() + ")"
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
  std::printf("tessel-run: %s rank %d%s on %s%s, %d thread%s%s: %.3f ms per "
              "%s (%s)\n",
              o.artifact.c_str(), rank, ranks.c_str(), exec->backend(),
              over.c_str(), o.threads, o.threads == 1 ? "" : "s",
              onCores.c_str(), median, o.train.steps ? "step" : "run",
              of.c_str());

  for (const auto &[name, file] : outputs) {
    Tensor t;
    if (Status s = exec->getOutput(name, t); !s)
      return fail(s.message());
    if (Status s = writeNpy(file, t); !s)
      return fail("output '" + name + "': " + s.message());
    std::printf("tessel-run: output '%s' %s %s -> %s\n", name.c_str(),
                dtypeName(t.dtype()), shapeToString(t.shape()).c_str(),
                file.c_str());
  }
  if (!o.train.losses.empty() && (rank == lossRank || worldSize == 1))
    if (int rc = writeLosses(o, lossesToWrite()))
      return rc;
  std::fflush(stdout);
  if (Status s = session.finish(); !s)
    return fail(s.message());
  if (!o.timeline.empty() && worldSize == 1) {
    if (Status s = mergeTimeline(o.timeline, 1, o.artifact + ": 1 rank");
        !s)
      return fail(s.message());
    std::printf("tessel-run: timeline -> %s\n", o.timeline.c_str());
  }
  return 0;
}

/// The launcher's ranks, restarted up to --max-restarts times from the
/// last checkpoint of --save (each restart's ranks see TESSEL_RESTART=K),
/// placed on the cores by the artifact's `mesh` (Launch.h).
int launchWithRestarts(const RunOptions &o, int argc, char **argv,
                       const MeshAxes &mesh) {
  std::vector<std::string> args(argv, argv + argc);
  for (int attempt = 0;; ++attempt) {
    std::vector<char *> ptrs;
    for (std::string &a : args)
      ptrs.push_back(a.data());
    ptrs.push_back(nullptr);
    if (attempt > 0)
      setenv("TESSEL_RESTART", std::to_string(attempt).c_str(), 1);
    int rc = launchLocalRanks(o.ranks, static_cast<int>(args.size()),
                              ptrs.data(), mesh);
    if (rc == 0 || attempt >= o.maxRestarts ||
        launcherStopped())
      return rc;
    // Resume from the last checkpoint, if the run saved one (else from
    // where the first attempt started).
    CheckpointInfo info;
    if (!readCheckpointInfo(o.train.save, info)) {
      std::fprintf(stderr, "tessel-run: restart %d of %d: no checkpoint in "
                           "%s yet: from the start\n",
                   attempt + 1, o.maxRestarts, o.train.save.c_str());
      continue;
    }
    std::fprintf(stderr,
                 "tessel-run: restart %d of %d: the %d ranks again, from the "
                 "checkpoint of step %lld in %s\n",
                 attempt + 1, o.maxRestarts, o.ranks,
                 static_cast<long long>(info.step), o.train.save.c_str());
    std::vector<std::string> next;
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i] == "--resume") {
        ++i;
        continue;
      }
      if (args[i].rfind("--resume=", 0) == 0)
        continue;
      next.push_back(args[i]);
    }
    next.push_back("--resume");
    next.push_back(o.train.save);
    args = std::move(next);
  }
}

} // namespace

int runArtifactMain(const RunOptions &o, int argc, char **argv) {
  for (const std::string &plugin : o.plugins)
    if (std::string err = tessel::ext::host::loadPlugin(plugin, "tessel-run");
        !err.empty())
      return fail(err);
  WorldInfo w;
  if (Status s = readWorld(w); !s)
    return usageError("bad environment: " + s.message());
  if (w.fromEnv && w.size > 1)
    gRankPrefix = "rank " + std::to_string(w.rank) + ": ";
  if (!w.fromEnv && o.ranks > 1) {
    // The launcher: refuse a mismatch once, here, then start the ranks.
    std::unique_ptr<Artifact> artifact;
    LoadOptions lo;
    lo.verifyChecksums = false;
    if (Status s = Artifact::open(o.artifact, artifact, lo); !s)
      return fail(s.message());
    if (Status s = checkRequiredPlugins(artifact->manifest()); !s)
      return fail(s.message());
    if (int rc = checkRanks(o, *artifact, o.ranks,
                            "-n " + std::to_string(o.ranks)))
      return rc;
    if (o.rankGiven)
      return usageError("--rank cannot be combined with -n");
    if (!o.trace.empty())
      if (Status s = checkWritable("--trace", o.trace); !s)
        return fail(s.message());
    if (!o.timeline.empty())
      if (Status s = checkWritable("--timeline", o.timeline); !s)
        return fail(s.message());
    int launched = launchWithRestarts(o, argc, argv, artifact->mesh());
    if (launched == 0 && !o.timeline.empty()) {
      if (Status s = mergeTimeline(
              o.timeline, o.ranks,
              o.artifact + ": " + std::to_string(o.ranks) + " ranks");
          !s)
        return fail(s.message());
      std::printf("tessel-run: timeline of %d ranks -> %s\n", o.ranks,
                  o.timeline.c_str());
    }
    if (launched == 0 && !o.trace.empty()) {
      if (Status s = mergeTraces(o.trace, o.ranks); !s)
        return fail(s.message());
      std::printf("tessel-run: trace of %d ranks -> %s\n", o.ranks,
                  o.trace.c_str());
    }
    return launched;
  }
  return runMain(o, w);
}

} // namespace tessel::tooling
