//===- CompileOptions.h - What a compile is asked to do ---------*- C++ -*-===//
//
// Every option of tesselc as plain data, with tesselc's defaults, and the
// table of their flags (name, field, help): tesselc makes its llvm::cl
// options from the table, the Python module parses its `flags=[...]` with
// parseCompileFlags. Nothing here is global or mutable.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_DRIVER_COMPILEOPTIONS_H
#define TESSEL_DRIVER_COMPILEOPTIONS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tessel::driver {

/// What to produce (tesselc --emit).
enum class Emit {
  /// The .tsl artifact directory.
  Artifact,
  /// The IR after the import (and the plan's annotations).
  Mlir,
  /// After -tessel-autodiff: the loss and its gradients (implies --train).
  Autodiff,
  /// After -tessel-propagate.
  Propagated,
  /// After -tessel-partition: the per-rank (SPMD) program.
  Partitioned,
  /// A pipeline schedule's report (no model).
  Schedule,
  /// The plan the compile applied (--plan=auto's choice) as a plan file.
  Plan,
  /// The input model with the plan as ONNX's multi-device annotations.
  Onnx,
};

/// One value of --emit: its name and its --help line.
struct EmitValue {
  Emit emit;
  const char *name;
  const char *help;
};

/// Every --emit value, in --help's order (tesselc's option and the Python
/// module's `emit=` both read it).
llvm::ArrayRef<EmitValue> getEmitValues();

/// A std::optional field is one whose absence differs from its default
/// (tesselc checks whether it was given); its default is in the comment.
struct CompileOptions {
  // General.
  Emit emit = Emit::Artifact;
  /// The model (.onnx, or tessel IR in a .mlir file).
  std::string input;
  /// -o: the artifact directory ("": the input's name with .tsl) or the IR
  /// or report file ("" or "-": CompileResult::text).
  std::string output;
  /// --mlir-print-debuginfo: each op's location beside it in the IR.
  bool printDebugInfo = false;
  /// Verify the module after every pass: off for --plan=auto's candidates,
  /// whose winner is compiled again, verified.
  bool verifyPasses = true;
  /// --plan-threads: --plan=auto's worker threads (0: one per core).
  int autoThreads = 0;
  /// --plan-exhaustive: --plan=auto lays out every candidate's memory.
  bool planExhaustive = false;
  /// The IR phases print their module into CompileResult::text: off for a
  /// caller that reads CompileResult::module alone (--plan=auto's
  /// candidates, where printing a 7 B model's IR cost a tenth of each).
  bool printText = true;

  // ONNX import.
  std::vector<std::string> shapes;
  bool printWeights = false;

  // Sharding.
  std::string mesh, plan;
  bool report = false;
  /// --predict: the step's predicted time and memory on --cluster (a
  /// built-in's name or a cluster file); docs/auto-plan.md.
  bool predict = false;
  /// --predict-expand: a pipeline of more than 3 microbatches compiled
  /// with three and expanded for the prediction (ExpandPipeline.h).
  bool predictExpand = false;
  std::string cluster = "cpu";
  /// --plan=auto: the ranks to plan for, --explain's table, the memory
  /// each device has ("" : the cluster's).
  int64_t devices = 0;
  bool explain = false;
  std::string memoryPerDevice;
  std::string weights, entry;

  // Training.
  bool train = false;
  std::vector<std::string> trainable, frozen;
  std::string loss = "cross_entropy", lossOutput, optimizer = "adamw";
  double lr = 1e-3;
  /// --weight-decay; PyTorch's default for the optimizer when not given
  /// (AdamW 0.01, Adam and SGD 0).
  std::optional<double> weightDecay;
  std::string betas = "0.9,0.999";
  double eps = 1e-8, momentum = 0.0;
  bool nesterov = false;
  std::string lrSchedule = "constant";
  int64_t warmupSteps = 0, totalSteps = 0;
  double clipGradNorm = 0.0;
  /// --grad-norm: the step returns the gradients' norm without clipping.
  bool gradNorm = false;
  bool gradsProgram = false;
  /// --eval-program: the loss alone into ART/eval, for tessel-run --eval.
  bool evalProgram = false;
  double bucketMb = 25.0;
  std::string plugin, deviceMemoryLimit;
  std::optional<double> chunkMb;   // 32
  std::optional<int> fsdpPrefetch; // 2
  bool zeroAsyncReduceScatter = true;
  std::optional<std::string> precision; // fp32
  std::optional<double> lossScale;      // 65536
  int64_t lossScaleGrowthInterval = 2000;
  bool recompute = false;
  std::string gradHandler;
  /// --no-fuse-attention: keep the exported attention ops unfused.
  bool noFuseAttention = false;
  /// --no-fuse-elementwise: one kernel per elementwise op.
  bool noFuseElementwise = false;

  // Pipeline schedules (--emit=schedule; with --train and a pp axis too).
  std::string schedule, scheduleFile;
  std::optional<std::string> stages;
  std::optional<int> microbatches;
  int chunks = 1;
  std::string costs = "1,1,1";
  double stepCost = 0.0, p2pLatency = 0.0, p2pBandwidth = 0.0,
         messageBytes = 0.0;
  std::vector<std::string> timelines;
  std::string saveSchedule;
  bool listSchedules = false, noActions = false;

  // Plugins (--load-plugin): loaded into the process's registries.
  std::vector<std::string> loadPlugins;
};

/// The --help group of a flag.
enum class FlagCategory { Import, Sharding, Training, Schedule, Plugin };

/// The field of CompileOptions a flag sets.
using FlagField =
    std::variant<bool CompileOptions::*, int CompileOptions::*,
                 int64_t CompileOptions::*, double CompileOptions::*,
                 std::string CompileOptions::*,
                 std::vector<std::string> CompileOptions::*,
                 std::optional<int> CompileOptions::*,
                 std::optional<double> CompileOptions::*,
                 std::optional<std::string> CompileOptions::*>;

/// One flag of tesselc (--emit, -o, the input and the --list-* actions are
/// the tool's own).
struct CompileFlag {
  const char *name;
  FlagField field;
  FlagCategory category;
  /// The value's name in --help ("" : the type's).
  const char *valueDesc;
  const char *help;
  /// A list flag whose values may be given comma-separated.
  bool commaSeparated = false;
};

/// Every flag, in no particular order (--help sorts them).
llvm::ArrayRef<CompileFlag> getCompileFlags();

/// Applies command-line flags ("--lr=0.1", "--lr", "0.1", "--recompute",
/// "--trainable=a,b", "--mlir-print-debuginfo") to `options`, as tesselc
/// parses them. The error is a DriverError (Driver.h), one line ending
/// "(see --help)", as tesselc's.
llvm::Error parseCompileFlags(llvm::ArrayRef<std::string> args,
                              CompileOptions &options);

} // namespace tessel::driver

#endif // TESSEL_DRIVER_COMPILEOPTIONS_H
