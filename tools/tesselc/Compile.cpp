//===- Compile.cpp - tesselc: model -> IR -> artifact ---------------------===//
//
// import (ONNX) or parse (.mlir) -> plan (--mesh, --plan) -> propagate ->
// partition -> export. One device is a mesh of size 1: without --mesh the
// same path runs with no mesh and every tensor whole.
//
//===----------------------------------------------------------------------===//

#include "Compile.h"
#include "ArtifactDir.h"
#include "Writable.h"
#include "WeightFiles.h"
#include "EmitMlir.h"
#include "EmitSchedule.h"
#include "TrainingInfo.h"
#include "BoosterPlugins.h"

#include "tessel/Export/CollectiveReport.h"
#include "tessel/Export/ExportArtifact.h"
#include "tessel/Export/GeminiReport.h"
#include "tessel/Export/MemoryReport.h"
#include "tessel/Export/ParameterReport.h"
#include "tessel/Export/PipelineReport.h"
#include "tessel/Export/ZeroReport.h"
#include "tessel/InitAll.h"
#include "tessel/Plan/Plan.h"
#include "tessel/Transforms/ArgumentNames.h"
#include "tessel/Transforms/CompilePipeline.h"
#include "dialects/tessel/PipelineAttrs.h"

#include "dialects/tessel/TesselOps.h"
#include "dialects/tessel/TextNesting.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include "tessel/support/Checked.h"

#include <cmath>

using namespace llvm;

cl::OptionCategory &tessel::getTrainingCategory() {
  static cl::OptionCategory category("Training options");
  return category;
}

cl::OptionCategory &tessel::getShardingCategory() {
  static cl::OptionCategory category("Sharding options");
  return category;
}

namespace {

cl::opt<std::string> meshSpec(
    "mesh", cl::value_desc("AXIS=N,..."),
    cl::desc("Device mesh, e.g. --mesh dp=2,tp=2: replaces the plan's "
             "mesh; an axis the plan names and --mesh omits has size 1"),
    cl::cat(tessel::getShardingCategory()));

cl::opt<std::string> planSpec(
    "plan", cl::value_desc("FILE|dp|megatron"),
    cl::desc("Sharding plan: a YAML/JSON file of name patterns -> specs, or "
             "the built-in 'dp' (batch over the dp axis) or 'megatron' "
             "(transformer blocks' column/row pairs over tp, found by graph "
             "structure; it prints what it chose)"),
    cl::cat(tessel::getShardingCategory()));

cl::opt<bool> report(
    "report",
    cl::desc("Print, per rank, each collective the runtime will run (the "
             "gathers that make sharded outputs whole included) with its "
             "axes and bytes (a training step's forward and backward apart, "
             "with its gradient buckets), the totals, and the planned peak "
             "memory (params, grads, optimizer state, activations)"),
    cl::init(false), cl::cat(tessel::getShardingCategory()));


cl::opt<bool> train("train",
                    cl::desc("Compile the training step: the loss, its "
                             "gradients and the optimizer's update "
                             "(docs/training.md)"),
                    cl::init(false), cl::cat(tessel::getTrainingCategory()));
cl::list<std::string> trainablePatterns(
    "trainable", cl::value_desc("PATTERN"), cl::CommaSeparated,
    cl::desc("With --train: exactly the weights whose names match these "
             "globs train (repeatable; comma-separated); --report lists the "
             "classes"),
    cl::cat(tessel::getTrainingCategory()));
cl::list<std::string> frozenPatterns(
    "frozen", cl::value_desc("PATTERN"), cl::CommaSeparated,
    cl::desc("With --train: the weights whose names match these globs never "
             "train (repeatable; comma-separated)"),
    cl::cat(tessel::getTrainingCategory()));
cl::opt<std::string> lossKind("loss", cl::desc("cross_entropy | mse"),
                              cl::init("cross_entropy"),
                              cl::cat(tessel::getTrainingCategory()));
cl::opt<std::string> lossOutput(
    "loss-output", cl::value_desc("NAME"),
    cl::desc("The output the loss is computed on, when the model has several"),
    cl::cat(tessel::getTrainingCategory()));
cl::opt<std::string> optimizer("optimizer", cl::desc("sgd | adam | adamw"),
                               cl::init("adamw"), cl::cat(tessel::getTrainingCategory()));
cl::opt<double> lr("lr", cl::desc("Learning rate"), cl::init(1e-3),
                   cl::cat(tessel::getTrainingCategory()));
cl::opt<double> weightDecay("weight-decay", cl::desc("Weight decay"),
                            cl::init(0.0), cl::cat(tessel::getTrainingCategory()));
cl::opt<std::string> betas("betas", cl::value_desc("B1,B2"),
                           cl::desc("Adam's betas"), cl::init("0.9,0.999"),
                           cl::cat(tessel::getTrainingCategory()));
cl::opt<double> eps("eps", cl::desc("Adam's epsilon"), cl::init(1e-8),
                    cl::cat(tessel::getTrainingCategory()));
cl::opt<double> momentum("momentum", cl::desc("SGD momentum"), cl::init(0.0),
                         cl::cat(tessel::getTrainingCategory()));
cl::opt<bool> nesterov("nesterov", cl::desc("SGD with Nesterov momentum"),
                       cl::init(false), cl::cat(tessel::getTrainingCategory()));
cl::opt<std::string> lrSchedule(
    "lr-schedule", cl::desc("constant | linear-warmup | cosine"),
    cl::init("constant"), cl::cat(tessel::getTrainingCategory()));
cl::opt<int64_t> warmupSteps(
    "warmup-steps", cl::value_desc("N"),
    cl::desc("Steps of linear warmup from 0 (--lr-schedule)"), cl::init(0),
    cl::cat(tessel::getTrainingCategory()));
cl::opt<int64_t> totalSteps(
    "total-steps", cl::value_desc("N"),
    cl::desc("Steps of the cosine schedule, warmup included"), cl::init(0),
    cl::cat(tessel::getTrainingCategory()));
cl::opt<double> clipGradNorm(
    "clip-grad-norm", cl::value_desc("MAX"),
    cl::desc("Clip the gradients' total L2 norm to MAX before the update "
             "(clip_grad_norm_)"),
    cl::init(0.0), cl::cat(tessel::getTrainingCategory()));

cl::opt<bool> gradsProgram(
    "grads-program",
    cl::desc("With --train: also compile the step without the optimizer "
             "(loss and gradients) into ART/grads, for tessel-run --grads"),
    cl::init(false), cl::cat(tessel::getTrainingCategory()));
cl::opt<double> bucketMb(
    "bucket-mb", cl::value_desc("MiB"),
    cl::desc("With a mesh: fuse the gradient all_reduces into buckets of at "
             "most MiB, each issued as soon as its gradients are computed, "
             "overlapping the backward (DDP; 0: one synchronous all_reduce "
             "per gradient, where the partitioner put it)"),
    cl::init(25.0), cl::cat(tessel::getTrainingCategory()));
cl::opt<std::string> pluginName(
    "plugin", cl::value_desc("ddp|zero1|zero2|fsdp|gemini|hybrid:KEY=VALUE,..."),
    cl::desc("With --train: how the step is spread over the mesh's dp axis, "
             "a named set of options (tesselc --list-plugins; "
             "docs/plugins.md); composes with --mesh and --plan (default "
             "--plan=dp). hybrid:tp=T,pp=P,dp=D,zero=Z,microbatches=M,"
             "schedule=S,chunks=V,precision=P makes the mesh dp x tp x pp "
             "(default --plan=megatron with tp > 1)"),
    cl::cat(tessel::getTrainingCategory()));
cl::opt<std::string> deviceMemoryLimit(
    "device-memory-limit", cl::value_desc("BYTES"),
    cl::desc("With --plugin gemini: device memory per rank for the chunks "
             "kept there and the step's arena, e.g. 2GiB, 512MiB, 1e9; the "
             "other chunks stay in host memory and are fetched ahead of use "
             "(default: no limit, every chunk in device memory)"),
    cl::cat(tessel::getTrainingCategory()));
cl::opt<double> chunkMb(
    "chunk-mb", cl::value_desc("MiB"),
    cl::desc("With --plugin gemini: the chunks' size in MiB of a rank's "
             "parameter blocks (a larger parameter gets a chunk of its own)"),
    cl::init(32.0), cl::cat(tessel::getTrainingCategory()));
cl::opt<int> fsdpPrefetch(
    "fsdp-prefetch", cl::value_desc("N"),
    cl::desc("With --plugin fsdp: parameter all_gathers issued ahead of "
             "their use, asynchronously, so that they overlap the compute "
             "before it: at most N in flight (0: each gathered synchronously "
             "right before its use)"),
    cl::init(2), cl::cat(tessel::getTrainingCategory()));
cl::opt<bool> zeroAsyncReduceScatter(
    "zero-async-reduce-scatter",
    cl::desc("With --plugin zero2|fsdp: the gradients' reduce_scatters run "
             "asynchronously, waited for right before the update, so that "
             "they overlap the backward (=0: each synchronously where its "
             "gradient is computed)"),
    cl::init(true), cl::cat(tessel::getTrainingCategory()));
cl::opt<std::string> precisionName(
    "precision", cl::value_desc("fp32|bf16|fp16"),
    cl::desc("With --train: mixed precision, the GEMMs (forward and "
             "backward) in bf16 or fp16, parameters and optimizer state f32 "
             "(docs/training.md)"),
    cl::init("fp32"), cl::cat(tessel::getTrainingCategory()));
cl::opt<double> lossScale(
    "loss-scale", cl::value_desc("S"),
    cl::desc("Dynamic loss scaling (GradScaler) from the initial scale S: "
             "a step whose gradients overflow is skipped and halves the "
             "scale (default with --precision fp16: 65536; 0: none)"),
    cl::init(65536.0), cl::cat(tessel::getTrainingCategory()));
cl::opt<int64_t> lossScaleGrowthInterval(
    "loss-scale-growth-interval", cl::value_desc("N"),
    cl::desc("Loss scaling: the scale doubles after N steps without "
             "overflow (GradScaler's growth_interval)"),
    cl::init(2000), cl::cat(tessel::getTrainingCategory()));
cl::opt<bool> recompute(
    "recompute",
    cl::desc("Activation checkpointing: recompute each layer's forward in "
             "the backward instead of keeping its activations"),
    cl::init(false), cl::cat(tessel::getTrainingCategory()));

/// --microbatches: with --train, the step's batch in K microbatches
/// (gradient accumulation); with --emit=schedule, the pipeline schedule's.
/// One option, declared by EmitSchedule.cpp. nullopt when not given.
std::optional<int64_t> trainingMicrobatches() {
  auto &opts = cl::getRegisteredOptions();
  auto it = opts.find("microbatches");
  if (it == opts.end())
    return std::nullopt;
  auto *opt = static_cast<cl::opt<int> *>(it->second);
  if (!opt->getNumOccurrences())
    return std::nullopt;
  return int64_t(*opt);
}

/// --plugin hybrid:...'s options against a flag that says the same: one
/// clear error when both are given and differ. Returns an exit code.
int agree(StringRef plugin, StringRef key, const std::string &option,
          StringRef flag, const std::string &value) {
  if (option.empty() || value.empty() || option == value)
    return 0;
  return tessel::fail("--plugin " + plugin + " contradicts --" + flag + " " +
                      value + ": " + key + "=" + option +
                      " in the plugin; give one of them");
}

/// Pipeline parallelism (docs/pipeline.md): a `pp` mesh axis with --train
/// turns on the stage split and the per-rank lowering. Returns an exit code
/// (0: fine).
int configurePipeline(mlir::tessel::TrainingOptions &t, int64_t ppSize,
                      const std::vector<mlir::tessel::PlanRule> &rules,
                      const tessel::HybridOptions *hybrid) {
  tessel::PipelineFlags flags = tessel::getPipelineFlags();
  if (hybrid) {
    // hybrid's schedule= and chunks= are --schedule's and --chunks'; its
    // stages the plan's rules, else --stages auto.
    const std::string plugin = pluginName;
    if (int rc = agree(plugin, "schedule", hybrid->schedule, "schedule",
                       flags.schedule))
      return rc;
    if (!hybrid->schedule.empty())
      flags.schedule = hybrid->schedule;
    if (hybrid->chunks) {
      if (int rc = agree(plugin, "chunks", std::to_string(hybrid->chunks),
                         "chunks",
                         flags.chunks != 1 ? std::to_string(flags.chunks)
                                           : ""))
        return rc;
      flags.chunks = hybrid->chunks;
    }
    if (ppSize > 1 && rules.empty() && flags.stages.empty())
      flags.stages = "auto";
  }
  if (ppSize == 0) {
    if (!rules.empty())
      return tessel::fail("the plan has stage rules but the mesh no 'pp' "
                          "axis (e.g. --mesh pp=2)");
    if (!flags.schedule.empty() || flags.stages == "auto")
      return tessel::fail("--schedule and --stages auto with --train need a "
                          "'pp' mesh axis (e.g. --mesh pp=2)");
    return 0;
  }
  if (!flags.stages.empty() && flags.stages != "auto")
    return tessel::fail("--stages with --train takes 'auto' (the number of "
                        "stages is pp times --chunks); got '" +
                        flags.stages + "'");
  const bool autoSplit = flags.stages == "auto";
  if (autoSplit && !rules.empty())
    return tessel::fail("--stages auto and the plan's stage rules: give one "
                        "of them");
  if (!autoSplit && rules.empty())
    return tessel::fail("--mesh with pp=" + std::to_string(ppSize) +
                        " needs stage rules in the plan (- node: \"/h.1*\" / "
                        "stage: 1) or --stages auto");
  if (flags.chunks < 1)
    return tessel::fail("--chunks must be at least 1, got " +
                        std::to_string(flags.chunks));
  if (t.optimizer.clipGradNorm > 0)
    return tessel::fail("--clip-grad-norm is not supported with a pipeline "
                        "yet (the norm spans every stage)");
  if (t.recompute)
    return tessel::fail("--recompute is not supported with a pipeline yet");
  t.pipelined = true;
  t.stageSplit.stages = ppSize * flags.chunks;
  t.stageSplit.autoSplit = autoSplit;
  for (const mlir::tessel::PlanRule &r : rules)
    t.stageSplit.rules.push_back(r.pattern + "=" + std::to_string(r.stage));
  t.pipeline.schedule = flags.schedule.empty() ? "1f1b" : flags.schedule;
  t.pipeline.scheduleFile = flags.scheduleFile;
  t.pipeline.chunks = flags.chunks;
  return 0;
}

/// Whether --mesh was made by --plugin hybrid:... (for the remarks).
bool meshFromPlugin = false;

/// --plugin hybrid:...: the mesh dp x tp x pp from its options, or its
/// options checked against --mesh (an axis --mesh leaves out has size 1);
/// the default plan (Megatron's tp split with tp > 1, else the batch over
/// dp); its precision. Fills the options --mesh gave. Returns an exit code.
int configureHybrid(tessel::HybridOptions &h) {
  const std::string plugin = pluginName;
  struct Axis {
    const char *name;
    int64_t *size;
  } axes[] = {{"dp", &h.dp}, {"tp", &h.tp}, {"pp", &h.pp}};
  if (!meshSpec.empty()) {
    auto parsed = mlir::tessel::parseMeshSpec(meshSpec);
    if (!parsed)
      return tessel::fail(toString(parsed.takeError()));
    for (Axis &a : axes) {
      int64_t size = 1;
      bool named = false;
      for (const auto &[name, n] : *parsed)
        if (name == a.name) {
          size = n;
          named = true;
        }
      if (*a.size && *a.size != size)
        return tessel::fail(
            "--plugin " + plugin + " contradicts --mesh " + meshSpec + ": " +
            a.name + "=" + std::to_string(*a.size) + " in the plugin, " +
            (named ? std::string(a.name) + "=" + std::to_string(size)
                   : "no " + std::string(a.name) + " axis (size 1)") +
            " in the mesh; give the sizes once (the plugin's options alone "
            "make the mesh dp x tp x pp)");
      *a.size = size;
    }
  } else {
    for (Axis &a : axes)
      *a.size = std::max<int64_t>(*a.size, 1);
    // dp always (the batch's axis, ZeRO's); tp and pp where they split.
    meshFromPlugin = true;
    meshSpec = "dp=" + std::to_string(h.dp);
    if (h.tp > 1)
      meshSpec += ",tp=" + std::to_string(h.tp);
    if (h.pp > 1)
      meshSpec += ",pp=" + std::to_string(h.pp);
  }
  if (planSpec.empty())
    planSpec = h.tp > 1 ? "megatron" : "dp";
  if (!h.precision.empty()) {
    if (int rc = agree(plugin, "precision", h.precision, "precision",
                       precisionName.getNumOccurrences() ? precisionName
                                                         : std::string()))
      return rc;
    precisionName = h.precision;
  }
  if (h.zero && h.dp == 1) {
    WithColor::remark(errs(), "tesselc")
        << "--plugin " << plugin << ": zero=" << h.zero
        << " with dp=1 shards nothing (ZeRO splits over dp): every state "
           "stays whole, as zero=0\n";
    h.zero = 0;
  }
  return 0;
}

cl::opt<std::string> weightsModel(
    "weights", cl::value_desc("model.onnx|FILE.safetensors|FILE.npz"),
    cl::desc("For a .mlir input: where its weights are: an ONNX model (its "
             "initializers), a .safetensors or an .npz file of tensors by "
             "name (default: the model it was imported from; none needed "
             "when it has no weights)"),
    cl::cat(tessel::getShardingCategory()));

cl::opt<std::string> entryName(
    "entry", cl::value_desc("NAME"),
    cl::desc("For a .mlir input with several functions: the one to compile "
             "(the others are dropped)"),
    cl::cat(tessel::getShardingCategory()));

// The key on an imported module that records where its weights are.
constexpr StringLiteral kModelAttr =
    mlir::tessel::TesselDialect::kModelPathAttrName;

/// --mesh gives the mesh; the axes the plan names (in its mesh or its rules)
/// that --mesh omits get size 1, with a remark: `--mesh tp=4` runs a dp x tp
/// plan as tp alone. (Without --mesh, a rule's axis missing from the plan's
/// own mesh stays an error: a typo, most likely.)
void addOmittedAxes(const mlir::tessel::Plan &plan,
                    std::vector<std::pair<std::string, int64_t>> &mesh) {
  std::vector<std::string> named;
  for (const auto &axis : plan.mesh)
    named.push_back(axis.first);
  for (const mlir::tessel::PlanRule &rule : plan.rules)
    for (const mlir::tessel::PlanSplit &split : rule.splits)
      named.insert(named.end(), split.axes.begin(), split.axes.end());
  for (const std::string &axis : named) {
    if (llvm::any_of(mesh, [&](auto &a) { return a.first == axis; }))
      continue;
    mesh.emplace_back(axis, 1);
    WithColor::remark(errs(), "tesselc")
        << "mesh axis '" << axis << "' of the plan is not in "
        << (meshFromPlugin ? "the mesh " + meshSpec + " of --plugin " +
                                 pluginName
                           : "--mesh " + meshSpec)
        << ": it has size 1\n";
  }
}

/// A mesh of several ranks on which no tensor is split runs the whole
/// program on every rank: most likely not what was meant.
void warnIfNothingSharded(
    mlir::ModuleOp module,
    const std::vector<std::pair<std::string, int64_t>> &mesh) {
  std::vector<int64_t> tensorAxes;
  std::string sizes;
  for (const auto &[name, size] : mesh) {
    // The pipeline axis splits the program into stages, not tensors.
    if (name != mlir::tessel::kPipelineAxis)
      tensorAxes.push_back(size);
    sizes += (sizes.empty() ? "" : ",") + name + "=" + std::to_string(size);
  }
  // The mesh was checked when parsed (at most 2^31 devices).
  const int64_t ranks = ::tessel::checkedProduct(tensorAxes).value_or(INT64_MAX);
  if (ranks <= 1)
    return;
  auto splitsOverSeveral = [&](mlir::Attribute attr) {
    auto spec = dyn_cast_or_null<mlir::tessel::TensorShardingAttr>(attr);
    if (!spec)
      return false;
    for (mlir::tessel::DimShardingAttr dim : spec.getDims())
      for (mlir::StringAttr axis : dim.getAxes())
        for (const auto &[name, size] : mesh)
          if (name == axis.getValue() && size > 1)
            return true;
    return false;
  };
  StringRef key = mlir::tessel::TesselDialect::kShardingAttrName;
  bool sharded = false;
  module.walk([&](mlir::Operation *op) {
    if (splitsOverSeveral(op->getAttr(key)))
      sharded = true;
    if (auto fn = dyn_cast<mlir::func::FuncOp>(op))
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        if (splitsOverSeveral(fn.getArgAttr(i, key)))
          sharded = true;
    return sharded ? mlir::WalkResult::interrupt()
                   : mlir::WalkResult::advance();
  });
  if (!sharded)
    WithColor::warning(errs(), "tesselc")
        << "the mesh " << sizes << " has " << ranks
        << " ranks but the plan splits no tensor over an axis of size > 1: "
           "the whole program is replicated on every rank\n";
}

/// The function to compile: the one --entry names (the others are dropped),
/// or the module's only function.
int selectEntry(mlir::ModuleOp module, StringRef inputPath) {
  std::vector<mlir::func::FuncOp> fns;
  for (auto fn : module.getOps<mlir::func::FuncOp>())
    if (!fn.isExternal())
      fns.push_back(fn);
  std::string names;
  for (auto fn : fns)
    names += (names.empty() ? "@" : ", @") + fn.getSymName().str();
  if (entryName.empty()) {
    if (fns.size() > 1)
      return tessel::fail("'" + inputPath + "' has " + std::to_string(fns.size()) +
                  " functions (" + names + "): pick one with --entry NAME");
    return 0;
  }
  auto it = llvm::find_if(
      fns, [&](mlir::func::FuncOp fn) { return fn.getSymName() == entryName; });
  if (it == fns.end())
    return tessel::fail("--entry " + entryName + ": '" + inputPath +
                "' has no function @" + entryName + " (it has " +
                (names.empty() ? std::string("none") : names) + ")");
  for (auto fn : fns)
    if (fn != *it && !fn.isPrivate())
      fn.erase();
  (*it).setPublic();
  return 0;
}

} // namespace

int tessel::compile(StringRef inputPath, StringRef outputPath,
                    StopAfter stop) {
  // The artifact's directory first: an unusable -o fails before any work.
  std::string out = outputPath.str();
  std::unique_ptr<ArtifactDir> artifactDir;
  if (stop == StopAfter::Artifact) {
    if (out.empty()) {
      SmallString<128> path(inputPath);
      sys::path::replace_extension(path, "tsl");
      out = sys::path::filename(path).str();
    }
    auto prepared = ArtifactDir::prepare(out);
    if (!prepared)
      return fail(toString(prepared.takeError()));
    artifactDir = std::move(*prepared);
  } else if (!out.empty() && out != "-") {
    if (std::string error = unwritable("-o", out); !error.empty())
      return fail(error);
  }

  if (precisionName.getNumOccurrences() && !train &&
      stop != StopAfter::Autodiff)
    return fail("--precision " + precisionName +
                " is for training: add --train");
  for (cl::list<std::string> *patterns :
       {std::addressof(trainablePatterns), std::addressof(frozenPatterns)})
    if (!patterns->empty() && !train && stop != StopAfter::Autodiff)
      return fail("--" + patterns->ArgStr.str() + " " + patterns->front() +
                  " is for training: add --train");
  // --plugin: checked before any work.
  const Plugin *plugin = nullptr;
  // hybrid: its options, and the plugin with its ZeRO stage.
  std::optional<HybridOptions> hybrid;
  Plugin hybridPlugin{};
  if (!pluginName.empty()) {
    auto [head, options] = StringRef(pluginName).split(':');
    plugin = findPlugin(head);
    if (!plugin)
      return fail("unknown --plugin '" + pluginName + "' (known: " +
                  pluginNames() + "; tesselc --list-plugins)");
    if (plugin->name == "hybrid") {
      auto parsed = parseHybridOptions(
          StringRef(pluginName).drop_front(head.size()));
      if (!parsed)
        return fail(toString(parsed.takeError()));
      hybrid = *parsed;
    } else if (StringRef(pluginName).contains(':')) {
      return fail("--plugin " + head + " takes no options (got '" +
                  pluginName + "'); hybrid:KEY=VALUE,... does");
    }
    if (!train && stop != StopAfter::Autodiff)
      return fail("--plugin " + pluginName + " is for training: add --train");
    if (hybrid) {
      if (int rc = configureHybrid(*hybrid))
        return rc;
      hybridPlugin = *plugin;
      hybridPlugin.name = pluginName;
      hybridPlugin.zeroStage = hybrid->zero;
      plugin = &hybridPlugin;
    } else {
      if (meshSpec.empty() && planSpec.empty())
        return fail("--plugin " + pluginName +
                    " needs a mesh with a dp axis: give --mesh dp=N");
      // The plugin's default plan: the batch over dp.
      if (planSpec.empty())
        planSpec = "dp";
    }
  }
  // Gemini's options: with --plugin gemini only.
  std::optional<int64_t> deviceLimit;
  if (!deviceMemoryLimit.empty() || chunkMb.getNumOccurrences()) {
    const char *flag =
        !deviceMemoryLimit.empty() ? "--device-memory-limit" : "--chunk-mb";
    if (!plugin || !plugin->gemini)
      return fail(std::string(flag) + " is for --plugin gemini (got " +
                  (plugin ? "--plugin " + pluginName : std::string("no --plugin")) +
                  ")");
  }
  if (!deviceMemoryLimit.empty()) {
    deviceLimit = parseByteSize(deviceMemoryLimit);
    if (!deviceLimit || *deviceLimit == 0)
      return fail("--device-memory-limit '" + deviceMemoryLimit +
                  "' is not a size in bytes > 0 (e.g. 2GiB, 512MiB, 1.5GB, "
                  "1e9)");
  }
  if (!(chunkMb > 0) || !std::isfinite(chunkMb))
    return fail("--chunk-mb must be a number > 0 (got " +
                llvm::formatv("{0}", llvm::format("%g", double(chunkMb)))
                    .str() +
                ")");

  if (fsdpPrefetch.getNumOccurrences() &&
      (!plugin || plugin->zeroStage != 3 || plugin->gemini))
    return fail("--fsdp-prefetch is for --plugin fsdp");
  if (fsdpPrefetch < 0)
    return fail("--fsdp-prefetch must be >= 0 (got " +
                std::to_string(fsdpPrefetch) + ")");

  mlir::DialectRegistry registry;
  mlir::tessel::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Passes warn where the program they make costs more than it should (a
  // reshape that gathers a split; docs/propagation.md): say so on stderr.
  mlir::ScopedDiagnosticHandler warnings(&context, [](mlir::Diagnostic &d) {
    if (d.getSeverity() != mlir::DiagnosticSeverity::Warning)
      return mlir::failure();
    WithColor::warning(errs(), "tesselc") << d.getLocation() << ": " << d
                                          << "\n";
    return mlir::success();
  });

  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::unique_ptr<mlir::tessel::WeightTable> weights;
  std::string weightsFrom;
  if (inputPath.ends_with(".mlir")) {
    // The file read once: its bracket depth checked before MLIR's parser,
    // which recurses once per level (dialects/tessel/TextNesting.h).
    auto file = llvm::MemoryBuffer::getFileOrSTDIN(inputPath);
    if (!file)
      return fail("cannot open '" + inputPath + "': " +
                  file.getError().message());
    if (std::string err = mlir::tessel::checkTextNesting((*file)->getBuffer());
        !err.empty())
      return fail(inputPath + ": " + err);
    llvm::SourceMgr sm;
    sm.AddNewSourceBuffer(std::move(*file), llvm::SMLoc());
    mlir::SourceMgrDiagnosticHandler handler(sm, &context);
    module = mlir::parseSourceFile<mlir::ModuleOp>(sm, &context);
    if (!module)
      return 1;
    mlir::tessel::nameArgumentsFromSource(module->getOperation(), sm);
    if (auto from = (*module)->getAttrOfType<mlir::StringAttr>(kModelAttr))
      weightsFrom = from.str();
    if (!weightsModel.empty())
      weightsFrom = weightsModel;
    if (StringRef(weightsModel).ends_with(".safetensors") ||
        StringRef(weightsModel).ends_with(".npz")) {
      // Tensors by name, checked against the program before any work.
      auto table = StringRef(weightsModel).ends_with(".npz")
                       ? readNpzWeights(weightsModel)
                       : readSafetensorsWeights(weightsModel);
      if (!table)
        return fail(toString(table.takeError()));
      if (Error err = checkWeights(*module, **table, weightsModel))
        return fail(toString(std::move(err)));
      weights = std::move(*table);
    } else if (!weightsModel.empty()) {
      // An ONNX model's initializers, its graph not imported (any model
      // holding those tensors will do). A program imported from that model
      // may also name constants the import folded: then the whole model is
      // imported at export, as before.
      auto table = mlir::tessel::readOnnxInitializers(context, weightsModel);
      if (!table)
        return fail("--weights: " + toString(table.takeError()));
      bool all = true;
      module->walk([&](mlir::tessel::WeightOp w) {
        if (!(*table)->lookup(w.getName()))
          all = false;
      });
      if (all) {
        if (Error err = checkWeights(*module, **table, weightsModel))
          return fail(toString(std::move(err)));
        weights = std::move(*table);
      }
    }
  } else {
    if (!entryName.empty())
      return fail("--entry is for a .mlir input with several functions; an "
                  "ONNX model has one graph");
    auto imported = importModel(context, inputPath);
    if (!imported)
      return fail(toString(imported.takeError()));
    module = std::move(imported->module);
    weights = std::move(imported->weights);
    SmallString<256> abs(inputPath);
    sys::fs::make_absolute(abs);
    (*module)->setAttr(kModelAttr, mlir::StringAttr::get(&context, abs));
  }

  if (int rc = selectEntry(*module, inputPath))
    return rc;

  // Annotate from a plan: the mesh, then the specs its rules give.
  std::vector<mlir::tessel::PlanRule> stageRules;
  int64_t ppSize = 0;
  if (!meshSpec.empty() || !planSpec.empty()) {
    if (!(*module).getOps<mlir::tessel::MeshOp>().empty())
      return fail("'" + inputPath +
                  "' already has a mesh; --mesh and --plan apply to "
                  "unannotated models");
    mlir::tessel::Plan plan;
    if (!planSpec.empty()) {
      auto loaded = mlir::tessel::loadPlan(planSpec, *module, errs());
      if (!loaded)
        return fail(toString(loaded.takeError()));
      plan = std::move(*loaded);
    }
    std::vector<std::pair<std::string, int64_t>> mesh = plan.mesh;
    if (!meshSpec.empty()) {
      auto parsed = mlir::tessel::parseMeshSpec(meshSpec);
      if (!parsed)
        return fail(toString(parsed.takeError()));
      mesh = std::move(*parsed);
    }
    if (mesh.empty())
      return fail("no mesh: give --mesh (e.g. --mesh dp=2,tp=2) or a plan "
                  "with 'mesh'");
    if (plugin && !hybrid)
      if (std::string error = checkPluginMesh(*plugin, mesh); !error.empty())
        return fail(error);
    if (!meshSpec.empty())
      addOmittedAxes(plan, mesh);
    stageRules = plan.stageRules;
    // pp is the pipeline's axis: stages, never a sharding spec.
    for (const mlir::tessel::PlanRule &r : plan.rules)
      for (const mlir::tessel::PlanSplit &split : r.splits)
        if (llvm::is_contained(split.axes, mlir::tessel::kPipelineAxis.str()))
          return fail("plan rule " + r.where + " splits '" + r.pattern +
                      "' over 'pp', the pipeline axis: pipeline stages are "
                      "'stage:' rules, never a sharding spec");
    for (const auto &[axis, size] : mesh)
      if (axis == mlir::tessel::kPipelineAxis)
        ppSize = size;
    std::vector<std::string> unmatched;
    if (Error err = mlir::tessel::applyPlan(*module, mesh, plan, &unmatched))
      return fail(toString(std::move(err)));
    for (const std::string &u : unmatched)
      WithColor::warning(errs(), "tesselc") << "plan rule " << u << "\n";
    warnIfNothingSharded(*module, mesh);
  }
  if (failed(mlir::verify(*module)))
    return 1;

  std::optional<mlir::tessel::TrainingOptions> training;
  if (train || stop == StopAfter::Autodiff) {
    mlir::tessel::TrainingOptions t;
    t.loss.kind = lossKind;
    t.loss.output = lossOutput;
    t.classify.trainable.assign(trainablePatterns.begin(),
                                trainablePatterns.end());
    t.classify.frozen.assign(frozenPatterns.begin(), frozenPatterns.end());
    mlir::tessel::OptimizerPassOptions &o = t.optimizer;
    o.kind = optimizer;
    o.lr = lr;
    o.eps = eps;
    o.weightDecay = weightDecay;
    o.momentum = momentum;
    o.nesterov = nesterov;
    o.lrSchedule = lrSchedule;
    o.warmupSteps = warmupSteps;
    o.totalSteps = totalSteps;
    o.clipGradNorm = clipGradNorm;
    std::optional<int64_t> microbatches = trainingMicrobatches();
    t.microbatch.count = microbatches.value_or(1);
    if (hybrid && hybrid->microbatches) {
      if (int rc = agree(pluginName, "microbatches",
                         std::to_string(hybrid->microbatches), "microbatches",
                         microbatches ? std::to_string(*microbatches) : ""))
        return rc;
      t.microbatch.count = hybrid->microbatches;
    }
    if (bucketMb < 0)
      return fail("--bucket-mb must be >= 0 (got " + std::to_string(bucketMb) + ")");
    t.buckets.bucketMb = bucketMb;
    t.gradHandler = gradHandlerName();
    t.recompute = recompute;
    if (plugin) {
      t.zero.stage = plugin->zeroStage;
      t.gemini = plugin->gemini;
      t.geminiChunks.chunkBytes =
          std::max<int64_t>(1, static_cast<int64_t>(chunkMb * (1 << 20)));
      t.geminiPlacement.deviceMemoryLimit = deviceLimit.value_or(0);
      // Gemini places its chunks around synchronous gathers.
      t.gatherAtUse.prefetch = plugin->gemini ? 0 : int(fsdpPrefetch);
      t.asyncReduceScatter = zeroAsyncReduceScatter;
    }
    if (precisionName != "fp32" && precisionName != "bf16" &&
        precisionName != "fp16")
      return fail("unknown --precision '" + precisionName +
                  "' (fp32, bf16, fp16)");
    if (precisionName != "fp32")
      t.precision = precisionName;
    // Loss scaling is fp16's (bf16 has f32's range); asked for, any
    // precision gets it.
    if (lossScale < 0 || !std::isfinite(lossScale))
      return fail("--loss-scale must be a finite number >= 0 (got " +
                  std::to_string(lossScale) + ")");
    if (lossScaleGrowthInterval < 1)
      return fail("--loss-scale-growth-interval must be >= 1 (got " +
                  std::to_string(lossScaleGrowthInterval) + ")");
    if (precisionName == "fp16" || lossScale.getNumOccurrences())
      o.lossScale = lossScale;
    o.growthInterval = lossScaleGrowthInterval;
    if (int rc = configurePipeline(t, ppSize, stageRules,
                                   hybrid ? &*hybrid : nullptr))
      return rc;
    SmallVector<StringRef, 2> b;
    StringRef(betas).split(b, ',');
    if (b.size() != 2 || b[0].trim().getAsDouble(o.beta1) ||
        b[1].trim().getAsDouble(o.beta2))
      return fail("--betas needs two numbers, e.g. --betas 0.9,0.999 (got '" +
                  betas + "')");
    training = t;
  }
  mlir::tessel::TrainingInfoOptions loss;
  if (training)
    loss = mlir::tessel::summarizeLoss(*module, lossKind, lossOutput);
  // --grads-program: the same step without the optimizer, compiled apart.
  mlir::OwningOpRef<mlir::ModuleOp> gradsModule;
  if (gradsProgram) {
    if (!train || stop != StopAfter::Artifact)
      return fail("--grads-program needs --train and an artifact");
    if (training->pipelined)
      return fail("--grads-program is not supported with a pipeline yet "
                  "(compile the gradient program without the pp axis)");
    gradsModule = module->clone();
    mlir::PassManager pm(&context);
    mlir::tessel::TrainingOptions t = *training;
    t.withOptimizer = false;
    mlir::tessel::buildCompilePipeline(
        pm, !(*gradsModule).getOps<mlir::tessel::MeshOp>().empty(),
        mlir::tessel::CompileStage::Partition, &t);
    if (failed(pm.run(*gradsModule)))
      return 1;
  }
  if (stop != StopAfter::Import) {
    mlir::PassManager pm(&context);
    mlir::tessel::CompileStage stage =
        stop == StopAfter::Autodiff    ? mlir::tessel::CompileStage::Autodiff
        : stop == StopAfter::Propagate ? mlir::tessel::CompileStage::Propagate
                                       : mlir::tessel::CompileStage::Partition;
    mlir::tessel::buildCompilePipeline(
        pm, !(*module).getOps<mlir::tessel::MeshOp>().empty(), stage,
        training ? &*training : nullptr);
    if (failed(pm.run(*module)))
      return 1;
  }
  if (report) {
    mlir::tessel::printParameterReport(*module, outs());
    mlir::tessel::printCollectiveReport(*module, outs());
    mlir::tessel::printMemoryReport(*module, outs());
    mlir::tessel::printPipelineReport(*module, outs());
    if (plugin && training &&
        (stop == StopAfter::Artifact || stop == StopAfter::Partition))
      mlir::tessel::printZeroReport(*module, plugin->name, plugin->zeroStage,
                                    outs());
    if (plugin && plugin->gemini && training &&
        (stop == StopAfter::Artifact || stop == StopAfter::Partition))
      mlir::tessel::printGeminiReport(*module, outs());
  }

  if (stop != StopAfter::Artifact) {
    std::string message;
    auto output = mlir::openOutputFile(out.empty() ? "-" : out, &message);
    if (!output)
      return fail(message);
    // --mlir-print-debuginfo: each op's location (after the import its ONNX
    // node name, what a plan's `node:` rule matches) beside it, not as an
    // alias at the end of the file. Without it, the arguments by name.
    mlir::OpPrintingFlags flags;
    if (flags.shouldPrintDebugInfo())
      flags.useLocalScope();
    mlir::tessel::printWithArgumentNames(module->getOperation(), output->os(),
                                         flags);
    output->os() << "\n";
    if (weights)
      printWeightsIfAsked(*weights, output->os());
    output->keep();
    return 0;
  }

  bool hasWeights = false;
  module->walk([&](mlir::tessel::WeightOp) {
    hasWeights = true;
    return mlir::WalkResult::interrupt();
  });
  if (!weights && !hasWeights) {
    // A program without weights needs no weights file.
    weights = std::make_unique<mlir::tessel::WeightTable>();
  } else if (!weights) {
    if (weightsFrom.empty())
      return fail("'" + inputPath +
                  "' does not say where its weights are: give --weights "
                  "model.onnx");
    auto imported = importModel(context, weightsFrom);
    if (!imported)
      return fail("reading the weights of '" + weightsFrom +
                  "': " + toString(imported.takeError()));
    weights = std::move(imported->weights);
  }
  mlir::tessel::WeightTable &table = *weights;
  auto lookup = [&](StringRef name, std::string &error)
      -> mlir::FailureOr<mlir::tessel::WeightData> {
    const mlir::tessel::WeightInfo *info = table.lookup(name);
    if (!info) {
      error = "no data for this weight in the model";
      return mlir::failure();
    }
    auto bytes = table.getData(*info);
    if (!bytes) {
      error = toString(bytes.takeError());
      return mlir::failure();
    }
    return mlir::tessel::WeightData{bytes->data(), bytes->size(),
                                    SmallVector<int64_t>(info->shape)};
  };
  StringRef dir = artifactDir->tempPath();
  mlir::tessel::ExportOptions artifactOptions;
  artifactOptions.displayPath = artifactDir->finalPath().str();
  if (failed(mlir::tessel::exportArtifact(*module, lookup, dir,
                                          artifactOptions)))
    return 1;
  if (training) {
    // The source model of --export-onnx: only an ONNX input is the graph the
    // trained tensors go back into (a .mlir may be any program).
    std::string onnx = inputPath.ends_with(".mlir") ? "" : inputPath.str();
    std::string error =
        tessel::writeTrainingFiles(*module, loss, lookup, onnx, dir);
    if (!error.empty())
      return fail(error);
  }
  if (gradsModule) {
    mlir::tessel::ExportOptions eo;
    eo.gradientWeightsAsStates = true;
    SmallString<256> grads(dir);
    sys::path::append(grads, "grads");
    if (failed(mlir::tessel::exportArtifact(*gradsModule, lookup, grads, eo)))
      return 1;
  }
  if (Error err = artifactDir->commit())
    return fail(toString(std::move(err)));
  return 0;
}
