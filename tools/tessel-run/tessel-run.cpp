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
#include "tessel/tooling/Run.h"

#include "TesselVersion.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

using tessel::tooling::RunOptions;
using tessel::tooling::usageError;

namespace {


const char kUsage[] =
    "usage: tessel-run ART.tsl [--input NAME=FILE.npy]... "
    "[--output [NAME=]FILE.npy]...\n"
    "                  [--threads N] [--repeat K] [--rank R] "
    "[--device cpu|cuda] [--no-verify] [--verbose]\n"
    "                  [-n N] [--timeout SECONDS] [--check-collectives]\n"
    "                  [--overlap-collectives auto|on|off]\n"
    "                  [--trace FILE.json]\n"
    "                  [--timeline FILE.svg] [--check-numerics]\n"
    "                  [--steps N [--data NAME=FILE.npy]... [--data-lm FILE.npy]\n"
    "                   [--losses FILE.npy] [--metrics FILE.jsonl]\n"
    "                   [--log-every N] [--save DIR [--save-every K]]\n"
    "                   [--max-restarts N]\n"
    "                   [--resume DIR] [--export-onnx FILE.onnx\n"
    "                   [--export-onnx-external]]\n"
    "                   [--save-weights FILE.safetensors]\n"
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
    "  --overlap-collectives auto|on|off\n"
    "                      run asynchronous collectives (gradient buckets,\n"
    "                      prefetches, ZeRO's reduce_scatters) on a thread\n"
    "                      beside the compute (on) or in place (off); auto\n"
    "                      (default): in place where ranks share memory and\n"
    "                      a rank has no core beyond its --threads\n"
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
    "                      (input_ids, or else the program's one integer\n"
    "                      input besides labels, whatever its name)\n"
    "  --data-tokens FILE  a flat file of token ids (nanoGPT's train.bin;\n"
    "                      --token-dtype uint16, the default, or uint32),\n"
    "                      mapped, not loaded: each step's input_ids rows are\n"
    "                      windows of seq tokens at random offsets (labels the\n"
    "                      next seq), drawn from --seed S (default 1337) and the\n"
    "                      step, so a resumed run reads the same windows;\n"
    "                      --seq N and --batch B, if given, must be the\n"
    "                      model's\n"
    "  --eval              no steps: the mean loss (and perplexity) of the\n"
    "                      evaluation program (tesselc --train\n"
    "                      --eval-program) over every row of --data-lm, on\n"
    "                      the parameters of --resume (else the initial ones)\n"
    "  --eval-data-lm FILE while training, that evaluation on FILE after the\n"
    "                      last step and every --eval-every N steps; a line\n"
    "                      each, and an eval_loss record in --metrics\n"
    "  --losses FILE       write the output 'loss' of every step this run\n"
    "                      executes (f32)\n"
    "  --metrics FILE      one JSON object per step, written and flushed as\n"
    "                      the step ends (a killed run keeps its lines): step,\n"
    "                      loss, lr (the rate the step's update used),\n"
    "                      ms, tokens_per_s (samples_per_s without token\n"
    "                      ids); --resume appends to it\n"
    "  --log-every N       one line every N steps (and the last) instead of\n"
    "                      every step: loss, lr, ms/step, tokens/s, progress\n"
    "                      and the time left, terminal or not\n"
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
    "  --export-onnx-external  write the trained tensors into FILE.data\n"
    "                      beside it (ONNX external data; always from 1 GiB)\n"
    "  --save-weights FILE after the last step, write the trained parameters\n"
    "                      whole under PyTorch's names, tied names too\n"
    "                      (safetensors; load_state_dict(strict=True))\n"
    "  --grads FILE        write the first executed step's gradients by\n"
    "                      parameter name, whole (safetensors; needs tesselc\n"
    "                      --train --grads-program)\n";


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

/// An option that takes an integer >= min (`given` set when it appears).
struct IntFlag {
  const char *flag;
  int *value;
  int min;
  const char *needs;
  bool *given = nullptr;
};

/// An option that takes a non-empty text (a file or directory name).
struct TextFlag {
  const char *flag;
  std::string *value;
  const char *needs;
};

/// The entry of `flags` whose flag `is` matches, or null.
template <typename Flag, size_t N, typename Is>
const Flag *findFlag(const Flag (&flags)[N], const Is &is) {
  for (const Flag &f : flags)
    if (is(f.flag))
      return &f;
  return nullptr;
}

/// The flags' combinations, once all are parsed: -1 when they go together,
/// else the usage error's exit code.
int checkCombinations(const RunOptions &o) {
  if (o.artifact.empty())
    return usageError("no artifact given");
  if (o.train.eval) {
    if (o.train.dataLm.empty())
      return usageError("--eval needs the held-out data: --data-lm FILE.npy");
    if (o.train.steps || !o.train.save.empty() || !o.train.losses.empty() ||
        !o.train.evalDataLm.empty())
      return usageError("--eval runs no steps: give it --data-lm and, for "
                        "trained parameters, --resume CHECKPOINT");
  }
  if (o.train.evalEvery && o.train.evalDataLm.empty())
    return usageError("--eval-every needs --eval-data-lm FILE.npy");
  if (!o.train.eval && o.train.needsSteps() && !o.train.steps)
    return usageError("--data, --data-lm, --losses, --save, --save-every, "
                      "--resume, --export-onnx, --save-weights and --grads need "
                      "--steps N");
  if (o.train.saveEvery && o.train.save.empty())
    return usageError("--save-every needs --save DIR");
  if (o.train.exportExternal && o.train.exportOnnx.empty())
    return usageError("--export-onnx-external needs --export-onnx FILE.onnx");
  if (o.maxRestarts && (o.train.save.empty() || o.ranks < 2))
    return usageError("--max-restarts needs -n N (N > 1) and --save DIR (a "
                      "restart resumes from the last checkpoint)");
  if (o.train.steps && o.repeat > 1)
    return usageError("--repeat cannot be combined with --steps (every step "
                      "is timed)");
  return -1;
}

/// Returns -1 to continue, or an exit code.
int parseArgs(int argc, char **argv, RunOptions &o) {
  const IntFlag intFlags[] = {
      {"--threads", &o.threads, 1, "an integer >= 1"},
      {"--repeat", &o.repeat, 1, "an integer >= 1", &o.repeatGiven},
      {"--rank", &o.rank, 0, "an integer >= 0", &o.rankGiven},
      {"--timeout", &o.timeout, 1, "a number of seconds >= 1"},
      {"--steps", &o.train.steps, 1, "an integer >= 1"},
      {"--save-every", &o.train.saveEvery, 1, "an integer >= 1"},
      {"--log-every", &o.train.logEvery, 1, "an integer >= 1"},
      {"--eval-every", &o.train.evalEvery, 1, "an integer >= 1"},
      {"--seed", &o.train.seed, 0, "an integer >= 0"},
      {"--seq", &o.train.seq, 1, "an integer >= 1"},
      {"--batch", &o.train.batch, 1, "an integer >= 1"},
      {"--max-restarts", &o.maxRestarts, 0, "an integer >= 0"}};
  const TextFlag textFlags[] = {
      {"--trace", &o.trace, "a file name"},
      {"--data-lm", &o.train.dataLm, "a file name"},
      {"--losses", &o.train.losses, "a file name"},
      {"--save", &o.train.save, "a directory"},
      {"--save-state", &o.train.save, "a directory"},
      {"--resume", &o.train.resume, "a checkpoint directory"},
      {"--export-onnx", &o.train.exportOnnx, "a file name"},
      {"--save-weights", &o.train.saveWeights, "a file name"},
      {"--grads", &o.train.grads, "a file name"},
      {"--metrics", &o.train.metrics, "a file name"},
      {"--eval-data-lm", &o.train.evalDataLm, "a file name"},
      {"--data-tokens", &o.train.dataTokens, "a file name"},
      {"--token-dtype", &o.train.tokenDtype, "uint16 or uint32"}};
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
    } else if (const IntFlag *f = findFlag(intFlags, is)) {
      if (!takeValue(f->flag) || !parseInt(value, f->min, *f->value))
        return usageError(std::string(f->flag) + " needs " + f->needs);
      if (f->given)
        *f->given = true;
    } else if (const TextFlag *f = findFlag(textFlags, is)) {
      if (!takeValue(f->flag) || value.empty())
        return usageError(std::string(f->flag) + " needs " + f->needs);
      *f->value = value;
    } else if (a == "-n" || is("--nproc")) {
      if (a == "-n") {
        if (i + 1 >= argc || !parseInt(argv[++i], 1, o.ranks))
          return usageError("-n needs an integer >= 1");
      } else if (!takeValue("--nproc") || !parseInt(value, 1, o.ranks)) {
        return usageError("--nproc needs an integer >= 1");
      }
    } else if (is("--backend")) {
      if (!takeValue("--backend"))
        return usageError("--backend needs a name");
      o.backend = value;
    } else if (is("--overlap-collectives")) {
      if (!takeValue("--overlap-collectives") ||
          (value != "auto" && value != "on" && value != "off"))
        return usageError("--overlap-collectives needs auto, on or off");
      o.overlap = value == "on"    ? tessel::runtime::CollectiveOverlap::On
                  : value == "off" ? tessel::runtime::CollectiveOverlap::Off
                                   : tessel::runtime::CollectiveOverlap::Auto;
    } else if (is("--device")) {
      if (!takeValue("--device") || (value != "cpu" && value != "cuda"))
        return usageError("--device needs cpu or cuda");
      o.backend = value;
    } else if (is("--timeline")) {
      if (!takeValue("--timeline") || value.size() < 5 ||
          value.substr(value.size() - 4) != ".svg")
        return usageError("--timeline needs a file name ending in .svg");
      o.timeline = value;
    } else if (is("--data")) {
      if (!takeValue("--data") || splitBinding(value).second.empty())
        return usageError("--data needs NAME=FILE.npy");
      o.train.data.push_back(splitBinding(value));
    } else if (a == "--eval") {
      o.train.eval = true;
    } else if (a == "--export-onnx-external") {
      o.train.exportExternal = true;
    } else if (a == "--no-verify") {
      o.verify = false;
    } else if (a == "--verbose" || a == "-v") {
      o.verbose = true;
    } else if (a == "--check-collectives") {
      o.checkCollectives = true;
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
  return checkCombinations(o);
}

} // namespace

int main(int argc, char **argv) {
  RunOptions o;
  int rc = parseArgs(argc, argv, o);
  if (rc >= 0)
    return rc;
  return tessel::tooling::runArtifactMain(o, argc, argv);
}
