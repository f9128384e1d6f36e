//===- tessel-run.cpp - Run a compiled Tessel artifact --------------------===//
//
//   tessel-run ART.tsl --input NAME=FILE.npy ... [--output FILE.npy]
//              [--output NAME=FILE.npy ...] [--threads N] [--repeat K]
//              [--rank R] [--device cpu|cuda] [--no-verify]
//              [-n N] [--timeout SECONDS]
//              [--steps N [--data NAME=FILE.npy]... [--data-lm FILE.npy]
//               [--losses FILE.npy] [--save DIR [--save-every K]]
//               [--resume DIR]]
//
// Reads inputs from .npy files, runs the program (with --repeat K: one
// untimed warm-up, then K timed runs whose median is printed) and writes the
// requested outputs as .npy. `--output NAME=FILE` binds output NAME only
// when NAME is one of the program's outputs; anything else (a bare FILE, a
// path with '=' in it) is a file for the first output. Every file to write
// is checked before the run. Exit status: 0 on success, 1 on a runtime
// error, 2 on a usage error.
//
// Several ranks (docs/runtime.md): `-n N` starts N local rank processes;
// a process started with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (torchrun
// style), by mpirun or by srun joins its world instead. Every rank reads
// the same whole inputs; rank 0 prints the time and writes the outputs.
//
// Training (Train.h, docs/training.md): `--steps N` runs the program N times
// on one executor, its state buffers carrying over; --data feeds a row of a
// file per step; rank 0 prints a line per step and writes --losses; every
// rank writes its states to the checkpoint --save DIR (Checkpoint.h), and
// --resume DIR continues a training from one. A non-finite loss (or state
// about to be saved) stops the training on every rank, and
// --check-numerics names the first instruction that made a NaN or an
// infinity (Numerics.h).
//
//===----------------------------------------------------------------------===//
#include "Checkpoint.h"
#include "Grads.h"
#include "Launch.h"
#include "Numerics.h"
#include "OnnxExport.h"
#include "Pipeline.h"
#include "Trace.h"
#include "Train.h"
#include "TrainingInfo.h"
#include "Writable.h"
#include "tessel/ExtensionHost/Host.h"
#include "tessel/runtime/CustomOp.h"
#include "tessel/runtime/Runtime.h"

#include "TesselVersion.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

using namespace tessel::runtime;

namespace {

const char kUsage[] =
    "usage: tessel-run ART.tsl [--input NAME=FILE.npy]... "
    "[--output [NAME=]FILE.npy]...\n"
    "                  [--threads N] [--repeat K] [--rank R] "
    "[--device cpu|cuda] [--no-verify] [--verbose]\n"
    "                  [-n N] [--timeout SECONDS] [--check-collectives]\n"
    "                  [--trace FILE.json]\n"
    "                  [--timeline FILE.svg] [--check-numerics]\n"
    "                  [--steps N [--data NAME=FILE.npy]... [--data-lm FILE.npy]\n"
    "                   [--losses FILE.npy] [--save DIR [--save-every K]]\n"
    "                   [--max-restarts N]\n"
    "                   [--resume DIR] [--export-onnx FILE.onnx]\n"
    "                   [--grads FILE.safetensors]]\n"
    "\n"
    "  --input NAME=FILE   bind graph input NAME to a .npy file (FILE alone\n"
    "                      when the program has exactly one input)\n"
    "  --output NAME=FILE  write graph output NAME to a .npy file (NAME= only\n"
    "                      when NAME is an output of the program; otherwise\n"
    "                      the whole value is a file for the first output)\n"
    "  --threads N         kernel threads (default 1)\n"
    "  --repeat K          one untimed warm-up run, then K timed runs; print\n"
    "                      their median (default: one timed run)\n"
    "  --rank R            run rank R's program alone, in this one process\n"
    "                      (default 0): to inspect or time one rank of a\n"
    "                      sharded artifact whose program has no collectives;\n"
    "                      a collective fails, as no other rank is there\n"
    "  --device cpu|cuda   where to run: the cpu or cuda backend (default\n"
    "                      cpu; --backend B is the same)\n"
    "  --no-verify         skip the CRC-32C checks of the artifact files\n"
    "  --verbose, -v       say which address each rank listens on, and why\n"
    "  --check-collectives compare every collective and send/recv with the\n"
    "                      peers' before it runs (debug): ranks whose programs\n"
    "                      differ fail at the first difference, naming both\n"
    "  -n N                run N ranks: starts N local processes, or checks\n"
    "                      the world that RANK/WORLD_SIZE (or mpirun, srun) give;\n"
    "                      ranks of one host share memory (TESSEL_COMM=gloo:\n"
    "                      TCP only)\n"
    "  --timeout SECONDS   a collective that makes no progress for this long\n"
    "                      fails, naming the rank to blame (default 30)\n"
    "  --trace FILE.json   write the last run's instructions as a Chrome\n"
    "                      trace (chrome://tracing, ui.perfetto.dev), one\n"
    "                      track per rank (pipelined programs: and one of\n"
    "                      their schedule's actions)\n"
    "  --timeline FILE.svg draw the last run of a pipelined program: one row\n"
    "                      per rank, a box per F/B/W/STEP action at its\n"
    "                      measured time (the schedule simulator's picture)\n"
    "  --check-numerics    check every instruction's f32 results: the first\n"
    "                      NaN or infinity an instruction produces is an\n"
    "                      error naming the instruction, its ONNX node and\n"
    "                      the rank (slower: each result is read once more)\n"
    "  --load-plugin LIB   load a plugin (docs/extending.md): the kernels of\n"
    "                      its ops; repeatable\n"
    "  --version           print the version and git revision\n"
    "\n"
    "training (a program with state buffers, run step after step; a\n"
    "non-finite loss, or state about to be saved, stops it with an error):\n"
    "  --steps N           train up to step N (counted from the start of the\n"
    "                      training: a resumed run continues from its\n"
    "                      checkpoint's step); the states carry over\n"
    "  --data NAME=FILE    feed input NAME from a .npy file: row k mod rows\n"
    "                      of its first dim at step k (a file shaped like the\n"
    "                      input: every step)\n"
    "  --data-lm FILE      an i64 [steps, batch, seq+1] .npy: input_ids =\n"
    "                      [k, :, :-1] and labels = [k, :, 1:] at step k\n"
    "  --losses FILE       write the output 'loss' of every step this run\n"
    "                      executes (f32)\n"
    "  --save DIR          after the last step, write a checkpoint: each\n"
    "                      rank's states to DIR/rank<R>.safetensors, the step\n"
    "                      and data position to DIR/model.safetensors.index.json;\n"
    "                      atomic (the previous one stays until it is whole);\n"
    "                      --save-state DIR is the same\n"
    "  --save-every K      also write the checkpoint after every K-th step\n"
    "  --resume DIR        start from a checkpoint (saved on this mesh or\n"
    "                      another): its states, its step, its data position\n"
    "  --max-restarts N    with -n and --save: when a rank dies, stop the\n"
    "                      others and restart the whole group from the last\n"
    "                      checkpoint, up to N times (torchrun's elastic agent);\n"
    "                      --losses then holds every step's loss\n"
    "  --export-onnx FILE  after the last step, write the source ONNX model\n"
    "                      with its trained tensors (parameters, running\n"
    "                      statistics)\n"
    "  --grads FILE        write the first executed step's gradients by\n"
    "                      parameter name, whole (safetensors; needs tesselc\n"
    "                      --train --grads-program)\n";

struct Options {
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
  tessel::run::TrainOptions train;
};

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

int usageError(const std::string &msg) {
  std::fprintf(stderr, "tessel-run: %s (see tessel-run --help)\n",
               msg.c_str());
  return 2;
}

bool parseInt(const std::string &s, int minValue, int &out) {
  if (s.empty() || s.size() > 9)
    return false;
  for (char c : s)
    if (c < '0' || c > '9')
      return false;
  out = std::atoi(s.c_str());
  return out >= minValue;
}

/// Splits "NAME=FILE" (NAME may be empty: "FILE").
std::pair<std::string, std::string> splitBinding(const std::string &s) {
  size_t eq = s.find('=');
  if (eq == std::string::npos)
    return {"", s};
  return {s.substr(0, eq), s.substr(eq + 1)};
}

/// Returns -1 to continue, or an exit code.
int parseArgs(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string value;
    auto takeValue = [&](const std::string &flag) -> bool {
      if (a.compare(0, flag.size() + 1, flag + "=") == 0) {
        value = a.substr(flag.size() + 1);
        return true;
      }
      if (a == flag) {
        if (i + 1 >= argc)
          return false;
        value = argv[++i];
        return true;
      }
      return false;
    };
    auto is = [&](const std::string &flag) {
      return a == flag || a.compare(0, flag.size() + 1, flag + "=") == 0;
    };
    if (a == "-h" || a == "--help") {
      std::printf("%s", kUsage);
      return 0;
    }
    if (a == "--version") {
      std::printf("tessel-run %s (git %s)\n", TESSEL_VERSION,
                  TESSEL_GIT_REVISION);
      return 0;
    }
    if (is("--load-plugin")) {
      if (!takeValue("--load-plugin"))
        return usageError("--load-plugin needs a plugin library");
      o.plugins.push_back(value);
    } else if (is("--input")) {
      if (!takeValue("--input"))
        return usageError("--input needs NAME=FILE.npy");
      o.inputs.push_back(splitBinding(value));
    } else if (is("--output")) {
      if (!takeValue("--output"))
        return usageError("--output needs [NAME=]FILE.npy");
      if (value.empty())
        return usageError("--output needs [NAME=]FILE.npy");
      o.outputs.push_back(value);
    } else if (is("--threads")) {
      if (!takeValue("--threads") || !parseInt(value, 1, o.threads))
        return usageError("--threads needs an integer >= 1");
    } else if (is("--repeat")) {
      if (!takeValue("--repeat") || !parseInt(value, 1, o.repeat))
        return usageError("--repeat needs an integer >= 1");
      o.repeatGiven = true;
    } else if (is("--rank")) {
      if (!takeValue("--rank") || !parseInt(value, 0, o.rank))
        return usageError("--rank needs an integer >= 0");
      o.rankGiven = true;
    } else if (a == "-n" || is("--nproc")) {
      if (a == "-n") {
        if (i + 1 >= argc || !parseInt(argv[++i], 1, o.ranks))
          return usageError("-n needs an integer >= 1");
      } else if (!takeValue("--nproc") || !parseInt(value, 1, o.ranks)) {
        return usageError("--nproc needs an integer >= 1");
      }
    } else if (is("--timeout")) {
      if (!takeValue("--timeout") || !parseInt(value, 1, o.timeout))
        return usageError("--timeout needs a number of seconds >= 1");
    } else if (is("--backend")) {
      if (!takeValue("--backend"))
        return usageError("--backend needs a name");
      o.backend = value;
    } else if (is("--device")) {
      if (!takeValue("--device") || (value != "cpu" && value != "cuda"))
        return usageError("--device needs cpu or cuda");
      o.backend = value;
    } else if (is("--trace")) {
      if (!takeValue("--trace") || value.empty())
        return usageError("--trace needs a file name");
      o.trace = value;
    } else if (is("--timeline")) {
      if (!takeValue("--timeline") || value.size() < 5 ||
          value.substr(value.size() - 4) != ".svg")
        return usageError("--timeline needs a file name ending in .svg");
      o.timeline = value;
    } else if (is("--steps")) {
      if (!takeValue("--steps") || !parseInt(value, 1, o.train.steps))
        return usageError("--steps needs an integer >= 1");
    } else if (is("--data")) {
      if (!takeValue("--data") || splitBinding(value).second.empty())
        return usageError("--data needs NAME=FILE.npy");
      o.train.data.push_back(splitBinding(value));
    } else if (is("--data-lm")) {
      if (!takeValue("--data-lm") || value.empty())
        return usageError("--data-lm needs a file name");
      o.train.dataLm = value;
    } else if (is("--losses")) {
      if (!takeValue("--losses") || value.empty())
        return usageError("--losses needs a file name");
      o.train.losses = value;
    } else if (is("--save-state") || is("--save")) {
      const char *flag = is("--save") ? "--save" : "--save-state";
      if (!takeValue(flag) || value.empty())
        return usageError(std::string(flag) + " needs a directory");
      o.train.save = value;
    } else if (is("--save-every")) {
      if (!takeValue("--save-every") || !parseInt(value, 1, o.train.saveEvery))
        return usageError("--save-every needs an integer >= 1");
    } else if (is("--resume")) {
      if (!takeValue("--resume") || value.empty())
        return usageError("--resume needs a checkpoint directory");
      o.train.resume = value;
    } else if (is("--export-onnx")) {
      if (!takeValue("--export-onnx") || value.empty())
        return usageError("--export-onnx needs a file name");
      o.train.exportOnnx = value;
    } else if (is("--grads")) {
      if (!takeValue("--grads") || value.empty())
        return usageError("--grads needs a file name");
      o.train.grads = value;
    } else if (a == "--no-verify") {
      o.verify = false;
    } else if (a == "--verbose" || a == "-v") {
      o.verbose = true;
    } else if (a == "--check-collectives") {
      o.checkCollectives = true;
    } else if (is("--max-restarts")) {
      if (!takeValue("--max-restarts") || !parseInt(value, 0, o.maxRestarts))
        return usageError("--max-restarts needs an integer >= 0");
    } else if (a == "--check-numerics") {
      o.checkNumerics = true;
    } else if (!a.empty() && a[0] == '-') {
      return usageError("unknown option '" + a + "'");
    } else if (o.artifact.empty()) {
      o.artifact = a;
    } else {
      return usageError("unexpected argument '" + a + "'");
    }
  }
  if (o.artifact.empty())
    return usageError("no artifact given");
  if (o.train.needsSteps() && !o.train.steps)
    return usageError("--data, --data-lm, --losses, --save, --save-every, "
                      "--resume, --export-onnx and --grads need --steps N");
  if (o.train.saveEvery && o.train.save.empty())
    return usageError("--save-every needs --save DIR");
  if (o.maxRestarts && (o.train.save.empty() || o.ranks < 2))
    return usageError("--max-restarts needs -n N (N > 1) and --save DIR (a "
                      "restart resumes from the last checkpoint)");
  if (o.train.steps && o.repeat > 1)
    return usageError("--repeat cannot be combined with --steps (every step "
                      "is timed)");
  return -1;
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
int checkRanks(const Options &o, const Artifact &artifact, int started,
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
int resolveOutputs(const Options &o, const Program &program,
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
int writeLosses(const Options &o, const std::vector<float> &losses) {
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
  tessel::run::CheckpointInfo info;
  std::string from =
      tessel::run::readCheckpointInfo(saveDir, info)
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
Status exportTrained(const Options &o, Executor &exec,
                     tessel::run::CheckpointGroup &group,
                     const tessel::artifact::TrainingInfo &training,
                     int worldSize, int64_t step, int64_t dataPosition) {
  std::string dir = o.train.save;
  const bool temporary = dir.empty();
  if (temporary) {
    dir = o.train.exportOnnx + ".states";
    tessel::run::CheckpointInfo info;
    info.step = step;
    info.dataPosition = dataPosition;
    info.ranks = worldSize;
    if (group.rank == 0)
      TSL_RETURN_IF_ERROR(tessel::run::removeCheckpointDir(dir));
    TSL_RETURN_IF_ERROR(tessel::run::saveCheckpoint(exec, dir, info, group));
  }
  Status result = Status::ok();
  if (group.rank == 0) {
    tessel::run::SavedStates saved;
    result = saved.read(dir);
    if (result)
      result = tessel::run::exportOnnx(o.artifact, training, saved,
                                       o.train.exportOnnx);
    if (temporary)
      if (Status s = tessel::run::removeCheckpointDir(dir); !s && result)
        result = s;
    if (result)
      std::printf("tessel-run: trained model (%d tensors) -> %s\n",
                  training.tensors_size(), o.train.exportOnnx.c_str());
  }
  if (worldSize > 1)
    TSL_RETURN_IF_ERROR(group.comm->barrier());
  return result;
}

int runMain(const Options &o, const tessel::run::WorldInfo &w) {
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
  tessel::run::RankSession session;
  if (worldSize > 1) {
    tessel::run::RankSession::SessionOptions so;
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
      files.emplace_back("--trace", worldSize > 1 ? tessel::run::rankTracePath(
                                                        o.trace, rank)
                                                  : o.trace);
    if (!o.timeline.empty()) {
      if (!program->pipelined)
        return fail("--timeline " + o.timeline + ": rank " +
                    std::to_string(rank) + "'s program is not pipelined (no "
                    "instruction carries a schedule action; compile with "
                    "tesselc --mesh pp=N --schedule S)");
      files.emplace_back("--timeline",
                         tessel::run::rankTracePath(o.timeline, rank));
    }
    for (const auto &[flag, file] : files)
      if (Status s = tessel::run::checkWritable(flag, file); !s)
        return fail(s.message());
  }
  std::unique_ptr<Executor> exec;
  ExecutorOptions eo;
  eo.threads = o.threads;
  eo.comm = session.comm();
  if (Status s = createExecutor(o.backend, program, eo, exec); !s)
    return fail(s.message());
  tessel::run::NumericsGuard numerics;
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
  if (Status s = tessel::run::readTrainingInfo(o.artifact, training,
                                               hasTraining);
      !s)
    return fail(s.message());
  const int lossRank = hasTraining ? training.loss_rank() : 0;
  if (!o.train.exportOnnx.empty() &&
      (!hasTraining || training.source_model().empty()))
    return fail("--export-onnx " + o.train.exportOnnx + ": " + o.artifact +
                " has no source model to write the trained tensors into "
                "(compile it with tesselc --train from an ONNX model)");

  // Per-step data (--data, --data-lm), checked against the inputs.
  tessel::run::StepFeeds feeds;
  if (hasTraining)
    feeds.checkLabelsOf(&training);
  if (Status s = feeds.load(o.train, *program); !s)
    return fail(s.message());

  // Checkpoints: rank 0 tidies up after a killed save, then every rank
  // loads its states from --resume.
  tessel::run::CheckpointGroup group;
  group.rank = rank;
  group.size = worldSize;
  group.comm = session.comm();
  group.store = session.kvStore();
  group.timeout = std::chrono::seconds(o.timeout);
  tessel::run::CheckpointInfo start;
  start.ranks = worldSize;
  // Every step's loss before this run's (from --resume's losses.npy):
  // saved with each checkpoint, and written by --losses after a restart.
  std::vector<float> history;
  bool historyComplete = true;
  if (!o.train.resume.empty() || !o.train.save.empty()) {
    if (rank == 0) {
      if (!o.train.resume.empty())
        if (Status s = tessel::run::recoverCheckpointDir(o.train.resume, false);
            !s)
          return fail(s.message());
      if (!o.train.save.empty())
        if (Status s = tessel::run::recoverCheckpointDir(o.train.save, true);
            !s)
          return fail(s.message());
    }
    if (worldSize > 1)
      if (Status s = session.comm()->barrier(); !s)
        return fail(s.message());
  }
  if (!o.train.resume.empty()) {
    if (Status s = tessel::run::readCheckpointInfo(o.train.resume, start); !s)
      return fail("--resume " + o.train.resume + ": " + s.message());
    if (o.train.steps <= start.step)
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
    if (Status s = tessel::run::loadCheckpoint(*exec, o.train.resume, rank,
                                               worldSize, pipelined);
        !s)
      return fail(s.message());
    // The losses before it, when it has them all.
    bool found = false;
    if (Status s = tessel::run::readCheckpointLosses(o.train.resume, history,
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
      if (Status s = tessel::run::checkLabels(training, t, "--input " + name +
                                                               "=" + file);
          !s)
        return fail(s.message());
    if (Status s = tessel::run::checkGatherIndices(*program, name, t,
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
    tessel::run::testHooks(rank);
  }
  if (!o.train.grads.empty()) {
    // The training's parameters into the gradient program's executor: as
    // they are on one rank; on several through a temporary checkpoint, as
    // the two programs may shard a parameter differently.
    auto fill = [&](Executor &grads) -> Status {
      if (worldSize == 1)
        return tessel::run::copyStates(*exec, grads);
      const std::string dir = o.train.grads + ".states";
      tessel::run::CheckpointInfo info = start;
      if (rank == 0)
        TSL_RETURN_IF_ERROR(tessel::run::removeCheckpointDir(dir));
      TSL_RETURN_IF_ERROR(tessel::run::saveCheckpoint(*exec, dir, info, group));
      Status s = tessel::run::loadCheckpoint(grads, dir, rank, worldSize,
                                              /*subset=*/true);
      TSL_RETURN_IF_ERROR(session.comm()->barrier());
      if (rank == 0)
        TSL_RETURN_IF_ERROR(tessel::run::removeCheckpointDir(dir));
      return s;
    };
    if (Status s = tessel::run::writeGradients(o.artifact, feeds,
                                               start.dataPosition, o.backend,
                                               eo, rank, o.train.grads, fill);
        !s)
      return fail(s.message());
  }
  exec->setTracing(!o.trace.empty() || !o.timeline.empty());
  std::vector<double> times;
  // Pipelined programs: the time of the timed runs blocked on peers.
  tessel::run::BubbleMeter bubble;
  tessel::run::StepResults steps;
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
      tessel::run::CheckpointInfo info;
      info.step = step;
      info.dataPosition = dataPosition;
      info.ranks = worldSize;
      if (rank == lossRank && historyComplete) {
        allLosses = history;
        allLosses.insert(allLosses.end(), steps.losses.begin(),
                         steps.losses.end());
        info.losses = &allLosses;
      }
      if (Status s = tessel::run::saveCheckpoint(*exec, o.train.save, info,
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
    std::function<Status(int64_t, int64_t)> after =
        [&](int64_t step, int64_t dataPosition) -> Status {
      bubble.add(exec->lastRunStats());
      Status saved = Status::ok();
      if (o.train.saveEvery && step % o.train.saveEvery == 0)
        saved = save(step, dataPosition);
      tessel::run::testStepHook(rank, step);
      return saved;
    };
    if (Status s = tessel::run::runSteps(
            *exec, feeds, start.step, o.train.steps, start.dataPosition, first,
            first && !o.train.losses.empty(), numerics, steps, after);
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
    if (Status s = tessel::run::reportPeakRss(session.comm(), rank, worldSize,
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
        worldSize > 1 ? tessel::run::rankTracePath(o.trace, rank) : o.trace;
    if (Status s = tessel::run::writeTrace(path, rank, *program, exec->lastTrace());
        !s)
      return fail(s.message());
  }
  if (!o.timeline.empty())
    if (Status s = tessel::run::writeTimelineSpans(
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
  std::printf("tessel-run: %s rank %d%s on %s%s, %d thread%s: %.3f ms per %s "
              "(%s)\n",
              o.artifact.c_str(), rank, ranks.c_str(), exec->backend(),
              over.c_str(), o.threads, o.threads == 1 ? "" : "s", median,
              o.train.steps ? "step" : "run", of.c_str());

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
    if (Status s = tessel::run::mergeTimeline(o.timeline, 1, o.artifact + ": 1 rank");
        !s)
      return fail(s.message());
    std::printf("tessel-run: timeline -> %s\n", o.timeline.c_str());
  }
  return 0;
}

/// The launcher's ranks, restarted up to --max-restarts times from the
/// last checkpoint of --save (each restart's ranks see TESSEL_RESTART=K).
int launchWithRestarts(const Options &o, int argc, char **argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (int attempt = 0;; ++attempt) {
    std::vector<char *> ptrs;
    for (std::string &a : args)
      ptrs.push_back(a.data());
    ptrs.push_back(nullptr);
    if (attempt > 0)
      setenv("TESSEL_RESTART", std::to_string(attempt).c_str(), 1);
    int rc = tessel::run::launchLocalRanks(o.ranks, static_cast<int>(args.size()),
                                           ptrs.data());
    if (rc == 0 || attempt >= o.maxRestarts ||
        tessel::run::launcherStopped())
      return rc;
    // Resume from the last checkpoint, if the run saved one (else from
    // where the first attempt started).
    tessel::run::CheckpointInfo info;
    if (!tessel::run::readCheckpointInfo(o.train.save, info)) {
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

int main(int argc, char **argv) {
  Options o;
  int rc = parseArgs(argc, argv, o);
  if (rc >= 0)
    return rc;
  for (const std::string &plugin : o.plugins)
    if (std::string err = tessel::ext::host::loadPlugin(plugin, "tessel-run");
        !err.empty())
      return fail(err);
  tessel::run::WorldInfo w;
  if (Status s = tessel::run::readWorld(w); !s)
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
      if (Status s = tessel::run::checkWritable("--trace", o.trace); !s)
        return fail(s.message());
    if (!o.timeline.empty())
      if (Status s = tessel::run::checkWritable("--timeline", o.timeline); !s)
        return fail(s.message());
    int launched = launchWithRestarts(o, argc, argv);
    if (launched == 0 && !o.timeline.empty()) {
      if (Status s = tessel::run::mergeTimeline(
              o.timeline, o.ranks,
              o.artifact + ": " + std::to_string(o.ranks) + " ranks");
          !s)
        return fail(s.message());
      std::printf("tessel-run: timeline of %d ranks -> %s\n", o.ranks,
                  o.timeline.c_str());
    }
    if (launched == 0 && !o.trace.empty()) {
      if (Status s = tessel::run::mergeTraces(o.trace, o.ranks); !s)
        return fail(s.message());
      std::printf("tessel-run: trace of %d ranks -> %s\n", o.ranks,
                  o.trace.c_str());
    }
    return launched;
  }
  return runMain(o, w);
}
