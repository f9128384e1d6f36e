//===- CompileOptions.cpp - tesselc's flags as a table --------------------===//
//
// One entry per flag: tesselc makes its llvm::cl options from it (their
// --help text is this), and parseCompileFlags reads flags with it for the
// Python module, without llvm::cl's global options.
//
//===----------------------------------------------------------------------===//

#include "tessel/Driver/CompileOptions.h"
#include "tessel/Driver/Driver.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

using namespace llvm;

namespace tessel::driver {

using O = CompileOptions;
using C = FlagCategory;

ArrayRef<EmitValue> getEmitValues() {
  static const EmitValue values[] = {
      {Emit::Artifact, "tsl", "compile the model to a .tsl artifact (default)"},
      {Emit::Mlir, "mlir",
       "stop after the ONNX import (and the plan's specs) and print the "
       "Tessel IR"},
      {Emit::Autodiff, "autodiff",
       "stop after the loss and its gradients (training; implies --train)"},
      {Emit::Propagated, "propagated", "stop after sharding propagation"},
      {Emit::Partitioned, "partitioned",
       "stop after partitioning: the per-rank program"},
      {Emit::Schedule, "schedule",
       "print per-rank pipeline schedules and their simulated bubble"},
      {Emit::Plan, "plan",
       "write the plan the compile applied (--plan=auto's choice) as a plan "
       "file to edit and reuse"},
      {Emit::Onnx, "onnx",
       "write the ONNX model with the plan the compile applied as ONNX's "
       "sharding annotations (--plan=onnx reads them)"},
  };
  return values;
}

ArrayRef<CompileFlag> getCompileFlags() {
  static const CompileFlag flags[] = {
      // ONNX import.
      {"shape", &O::shapes, C::Import, "NAME=D0xD1x...",
       "Static shape of a graph input; fixes its dynamic dims (repeatable), "
       "e.g. --shape input_ids=2x32"},
      {"no-fuse-attention", &O::noFuseAttention, C::Import, "",
       "Keep the exported attention (matmul, mask, softmax, matmul) as it "
       "is instead of one tessel.attention (docs/fusion.md): to compare"},
      {"no-fuse-elementwise", &O::noFuseElementwise, C::Import, "",
       "Keep one kernel per elementwise op instead of one "
       "tessel.fused_elementwise per chain (docs/fusion.md): to compare"},
      {"print-weights", &O::printWeights, C::Import, "",
       "After the module, list each weight's dtype, shape, size and origin "
       "as comments"},
      // Sharding.
      {"mesh", &O::mesh, C::Sharding, "AXIS=N,...",
       "Device mesh, e.g. --mesh dp=2,tp=2: replaces the plan's mesh; an "
       "axis the plan names and --mesh omits has size 1"},
      {"plan", &O::plan, C::Sharding, "FILE|dp|megatron|auto",
       "Sharding plan: a YAML/JSON file of name patterns -> specs, or the "
       "built-in 'dp' (batch over the dp axis) or 'megatron' (transformer "
       "blocks' column/row pairs over tp, found by graph structure; it "
       "prints what it chose), or 'auto' (with --train and --devices: the "
       "mesh, tp, pipeline, ZeRO stage, microbatches and recomputation "
       "predicted fastest on --cluster; docs/auto-plan.md)"},
      {"report", &O::report, C::Sharding, "",
       "Print, per rank, each collective the runtime will run (the gathers "
       "that make sharded outputs whole included) with its axes and bytes "
       "(a training step's forward and backward apart, with its gradient "
       "buckets), the totals, and the planned peak memory (params, grads, "
       "optimizer state, activations)"},
      {"predict", &O::predict, C::Sharding, "",
       "Print the step's predicted time (compute, exposed communication, "
       "pipeline bubble), achieved FLOP/s and peak memory per rank on "
       "--cluster, without running it (docs/auto-plan.md); alone it writes "
       "nothing and reads no weight's bytes (with -o, the artifact too)"},
      {"plan-threads", &O::autoThreads, C::Sharding, "n",
       "--plan=auto's worker threads, each compiling and predicting the next "
       "candidate; default one per core"},
      {"plan-exhaustive", &O::planExhaustive, C::Sharding, "",
       "--plan=auto lays out every candidate's memory, not only that of "
       "those that may win: --explain then gives every need exactly, and "
       "the same choice, in several times the time"},
      {"predict-expand", &O::predictExpand, C::Sharding, "",
       "With --predict on a pipeline of more than 3 microbatches: compile "
       "three of them (the first, one in the middle, the last) and expand "
       "the program to all of them in the prediction, as --plan=auto does; "
       "the same figures up to the order of ops within an action, in a "
       "fraction of the time (docs/auto-plan.md). Writes no artifact"},
      {"cluster", &O::cluster, C::Sharding, "NAME|FILE.yaml",
       "The devices and links --predict costs on: a built-in (a100, h100, "
       "h200: DGX nodes of 8; cpu: nominal CPU cores) or a cluster file "
       "(default cpu)"},
      {"devices", &O::devices, C::Sharding, "N",
       "With --plan=auto: the ranks to plan the training step for"},
      {"explain", &O::explain, C::Sharding, "",
       "With --plan=auto: print the best candidates (predicted step split "
       "into compute, exposed communication and bubble; peak memory per "
       "rank), those that do not fit or compile, and why the winner won. "
       "With --predict: the predicted time per op name too"},
      {"memory-per-device", &O::memoryPerDevice, C::Sharding, "BYTES",
       "With --plan=auto: the memory each rank may use, e.g. 80GiB, 512MiB "
       "(default: the --cluster device's)"},
      {"weights", &O::weights, C::Sharding,
       "model.onnx|FILE.safetensors|FILE.npz",
       "For a .mlir input: where its weights are: an ONNX model (its "
       "initializers), a .safetensors or an .npz file of tensors by name "
       "(default: the model it was imported from; none needed when it has "
       "no weights)"},
      {"entry", &O::entry, C::Sharding, "NAME",
       "For a .mlir input with several functions: the one to compile (the "
       "others are dropped)"},
      // Training.
      {"train", &O::train, C::Training, "",
       "Compile the training step: the loss, its gradients and the "
       "optimizer's update (docs/training.md)"},
      {"trainable", &O::trainable, C::Training, "PATTERN",
       "With --train: exactly the weights whose names match these globs "
       "train (repeatable; comma-separated); --report lists the classes",
       /*commaSeparated=*/true},
      {"frozen", &O::frozen, C::Training, "PATTERN",
       "With --train: the weights whose names match these globs never "
       "train (repeatable; comma-separated)",
       /*commaSeparated=*/true},
      {"loss", &O::loss, C::Training, "",
       "cross_entropy | mse (default cross_entropy)"},
      {"loss-output", &O::lossOutput, C::Training, "NAME",
       "The output the loss is computed on, when the model has several"},
      {"optimizer", &O::optimizer, C::Training, "",
       "sgd | adam | adamw (default adamw)"},
      {"lr", &O::lr, C::Training, "", "Learning rate (default 0.001)"},
      {"weight-decay", &O::weightDecay, C::Training, "",
       "Weight decay (default PyTorch's: 0.01 for adamw, decoupled; 0 for "
       "adam and sgd)"},
      {"betas", &O::betas, C::Training, "B1,B2",
       "Adam's betas (default 0.9,0.999)"},
      {"eps", &O::eps, C::Training, "", "Adam's epsilon (default 1e-8)"},
      {"momentum", &O::momentum, C::Training, "", "SGD momentum (default 0)"},
      {"nesterov", &O::nesterov, C::Training, "",
       "SGD with Nesterov momentum"},
      {"lr-schedule", &O::lrSchedule, C::Training, "",
       "constant | linear-warmup | cosine (default constant)"},
      {"warmup-steps", &O::warmupSteps, C::Training, "N",
       "Steps of linear warmup from 0 (--lr-schedule; default 0)"},
      {"total-steps", &O::totalSteps, C::Training, "N",
       "Steps of the cosine schedule, warmup included"},
      {"clip-grad-norm", &O::clipGradNorm, C::Training, "MAX",
       "Clip the gradients' total L2 norm to MAX before the update "
       "(clip_grad_norm_)"},
      {"grad-norm", &O::gradNorm, C::Training, "",
       "Without --clip-grad-norm: the step also computes the gradients' "
       "total L2 norm (tessel-run --metrics' grad_norm; --clip-grad-norm "
       "computes it anyway)"},
      {"eval-program", &O::evalProgram, C::Training, "",
       "With --train: also compile the loss alone (the forward on the same "
       "mesh and plan, no gradients, no update) into ART/eval, for "
       "tessel-run --eval and --eval-every"},
      {"grads-program", &O::gradsProgram, C::Training, "",
       "With --train: also compile the step without the optimizer (loss and "
       "gradients) into ART/grads, for tessel-run --grads"},
      {"bucket-mb", &O::bucketMb, C::Training, "MiB",
       "With a mesh: fuse the gradient all_reduces into buckets of at most "
       "MiB, each issued as soon as its gradients are computed, overlapping "
       "the backward (DDP; 0: one synchronous all_reduce per gradient, where "
       "the partitioner put it)"},
      {"plugin", &O::plugin, C::Training,
       "ddp|zero1|zero2|fsdp|gemini|hybrid:KEY=VALUE,...",
       "With --train: how the step is spread over the mesh's dp axis, a "
       "named set of options (tesselc --list-plugins; docs/plugins.md); "
       "composes with --mesh and --plan (default --plan=dp). "
       "hybrid:tp=T,pp=P,dp=D,zero=Z,microbatches=M,schedule=S,chunks=V,"
       "precision=P makes the mesh dp x tp x pp (default --plan=megatron "
       "with tp > 1)"},
      {"device-memory-limit", &O::deviceMemoryLimit, C::Training, "BYTES",
       "With --plugin gemini: device memory per rank for the chunks kept "
       "there and the step's arena, e.g. 2GiB, 512MiB, 1e9; the other chunks "
       "stay in host memory and are fetched ahead of use (default: no limit, "
       "every chunk in device memory)"},
      {"chunk-mb", &O::chunkMb, C::Training, "MiB",
       "With --plugin gemini: the chunks' size in MiB of a rank's parameter "
       "blocks (a larger parameter gets a chunk of its own)"},
      {"fsdp-prefetch", &O::fsdpPrefetch, C::Training, "N",
       "With --plugin fsdp: parameter all_gathers issued ahead of their use, "
       "asynchronously, so that they overlap the compute before it: at most "
       "N in flight (0: each gathered synchronously right before its use)"},
      {"zero-async-reduce-scatter", &O::zeroAsyncReduceScatter, C::Training,
       "",
       "With --plugin zero2|fsdp: the gradients' reduce_scatters run "
       "asynchronously, waited for right before the update, so that they "
       "overlap the backward (=0: each synchronously where its gradient is "
       "computed)"},
      {"precision", &O::precision, C::Training, "fp32|bf16|fp16",
       "With --train: mixed precision, the GEMMs (forward and backward) in "
       "bf16 or fp16, parameters and optimizer state f32 "
       "(docs/training.md)"},
      {"loss-scale", &O::lossScale, C::Training, "S",
       "Dynamic loss scaling (GradScaler) from the initial scale S: a step "
       "whose gradients overflow is skipped and halves the scale (default "
       "with --precision fp16 or a model with fp16 parameters: 65536; 0: "
       "none)"},
      {"loss-scale-growth-interval", &O::lossScaleGrowthInterval,
       C::Training, "N",
       "Loss scaling: the scale doubles after N steps without overflow "
       "(GradScaler's growth_interval)"},
      {"recompute", &O::recompute, C::Training, "",
       "Activation checkpointing: recompute each layer's forward in the "
       "backward instead of keeping its activations"},
      {"grad-handler", &O::gradHandler, C::Training, "name",
       "With --train on a mesh: what reduces the data-parallel gradients "
       "before the optimizer: ddp (the plain all_reduce, default) or a "
       "plugin's handler"},
      // Pipeline schedules.
      {"schedule", &O::schedule, C::Schedule, "name",
       "Schedule to generate: gpipe, 1f1b, interleaved-1f1b, zb-h1, or any "
       "registered one (see --list-schedules)"},
      {"schedule-file", &O::scheduleFile, C::Schedule, "file",
       "Load the schedule from a text or CSV file of actions instead (see "
       "docs/pipeline.md)"},
      {"stages", &O::stages, C::Schedule, "p|auto",
       "Pipeline depth: number of pipeline ranks (--emit=schedule). With "
       "--train and a pp mesh axis: 'auto' balances the stages with the cost "
       "model instead of the plan's stage rules"},
      {"microbatches", &O::microbatches, C::Schedule, "m",
       "Microbatches per training step"},
      {"chunks", &O::chunks, C::Schedule, "v",
       "Model chunks per rank (interleaved-1f1b); default 1"},
      {"costs", &O::costs, C::Schedule, "F,B,W",
       "Cost of a forward, an input-gradient backward and a weight-gradient "
       "backward; a fused backward costs B+W. Default 1,1,1. Per stage: "
       "F0,B0,W0;F1,B1,W1;..."},
      {"step-cost", &O::stepCost, C::Schedule, "t",
       "Cost of an optimizer step; default 0"},
      {"p2p-latency", &O::p2pLatency, C::Schedule, "t",
       "Latency of one send/recv; default 0"},
      {"p2p-bandwidth", &O::p2pBandwidth, C::Schedule, "bytes/unit",
       "Bandwidth of a send/recv; default 0, unlimited"},
      {"message-bytes", &O::messageBytes, C::Schedule, "n",
       "Bytes of one activation or gradient message; default 0"},
      {"timeline", &O::timelines, C::Schedule, "file.json|file.svg",
       "Write the simulated timeline: .json for Chrome trace / Perfetto, "
       ".svg for a picture; may be repeated"},
      {"save-schedule", &O::saveSchedule, C::Schedule, "file",
       "Write the verified schedule in its text form (loadable with "
       "--schedule-file)"},
      {"list-schedules", &O::listSchedules, C::Schedule, "",
       "List the registered schedules and exit"},
      {"no-actions", &O::noActions, C::Schedule, "",
       "Print only the figures, not the action lists"},
      // Plugins.
      {"load-plugin", &O::loadPlugins, C::Plugin, "lib.so",
       "Load a Tessel plugin (docs/extending.md): its ops, schedules, "
       "gradient handlers and parallel modes join the built-ins; "
       "repeatable"},
  };
  return flags;
}

namespace {

/// tesselc's usage errors: "tesselc: error: <message> (see --help)".
Error usage(const Twine &message) {
  return make_error<DriverError>((message + " (see --help)").str());
}
Error invalid(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

// The values as llvm::cl's parsers read them, with their messages.
Error parse(StringRef v, bool &out) {
  if (v == "" || v == "true" || v == "TRUE" || v == "True" || v == "1")
    out = true;
  else if (v == "false" || v == "FALSE" || v == "False" || v == "0")
    out = false;
  else
    return invalid("'" + v + "' is invalid value for boolean argument! Try 0 "
                            "or 1");
  return Error::success();
}
template <typename T>
Error parseInteger(StringRef v, T &out, const char *type) {
  if (v.getAsInteger(0, out))
    return invalid("'" + v + "' value invalid for " + type + " argument!");
  return Error::success();
}
Error parse(StringRef v, int &out) {
  return parseInteger(v, out, "integer");
}
Error parse(StringRef v, int64_t &out) {
  return parseInteger(v, out, "long");
}
Error parse(StringRef v, double &out) {
  if (v.getAsDouble(out))
    return invalid("'" + v + "' value invalid for floating point argument!");
  return Error::success();
}
Error parse(StringRef v, std::string &out) {
  out = v.str();
  return Error::success();
}
template <typename T>
Error parse(StringRef v, std::optional<T> &out) {
  T value{};
  if (Error err = parse(v, value))
    return err;
  out = std::move(value);
  return Error::success();
}
Error parse(StringRef v, std::vector<std::string> &out) {
  out.push_back(v.str());
  return Error::success();
}

/// The flag nearest to `name`, for "Did you mean".
StringRef nearest(StringRef name) {
  StringRef best;
  unsigned bestDistance = ~0u;
  for (const CompileFlag &f : getCompileFlags())
    if (unsigned d = name.edit_distance(f.name); d < bestDistance) {
      best = f.name;
      bestDistance = d;
    }
  return best;
}

} // namespace

Error parseCompileFlags(ArrayRef<std::string> args, CompileOptions &options) {
  for (size_t i = 0; i < args.size(); ++i) {
    StringRef arg = args[i];
    if (!arg.starts_with("-") || arg == "-")
      return usage("Too many positional arguments specified! Can specify at "
                   "most 1 positional arguments");
    StringRef spelled = arg.drop_front(arg.starts_with("--") ? 2 : 1);
    auto [name, value] = spelled.split('=');
    bool hasValue = spelled.contains('=');
    if (name == "mlir-print-debuginfo") {
      if (Error err = parse(value, options.printDebugInfo))
        return usage("for the --" + name + " option: " +
                     toString(std::move(err)));
      continue;
    }
    const CompileFlag *flag = llvm::find_if(
        getCompileFlags(), [&](const CompileFlag &f) { return name == f.name; });
    if (flag == getCompileFlags().end())
      return usage("Unknown command line argument '" + arg +
                   "'. Did you mean '--" + nearest(name) + "'?");
    const bool isBool =
        std::holds_alternative<bool CompileOptions::*>(flag->field);
    if (!hasValue && !isBool) {
      if (i + 1 == args.size())
        return usage("for the --" + name + " option: requires a value!");
      value = args[++i];
    }
    SmallVector<StringRef> values;
    if (flag->commaSeparated)
      value.split(values, ',');
    else
      values.push_back(value);
    for (StringRef v : values)
      if (Error err = std::visit(
              [&](auto field) { return parse(v, options.*field); },
              flag->field))
        return usage("for the --" + name + " option: " +
                     toString(std::move(err)));
  }
  return Error::success();
}

} // namespace tessel::driver
