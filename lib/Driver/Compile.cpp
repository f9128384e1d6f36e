//===- Compile.cpp - The compile driver: model -> IR -> artifact ----------===//
//
// load: import (ONNX) or parse (.mlir) -> plan (--mesh, --plan, --plugin)
// -> the pass pipeline to the phase asked for -> emit the IR or export the
// artifact. One device is a mesh of size 1: without --mesh the same path
// runs with no mesh and every tensor whole.
//
// A Compilation is one call's state: its options (which --plugin hybrid
// completes), its messages and the MLIR errors its diagnostic handler
// collected. Every failure is a DriverError with the text tesselc prints.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "ArtifactDir.h"
#include "OnnxPlan.h"
#include "TrainingInfo.h"
#include "WeightFiles.h"
#include "Writable.h"

#include "tessel/Driver/BoosterPlugins.h"
#include "tessel/Export/ExportArtifact.h"
#include "tessel/Export/Reports.h"
#include "tessel/Predict/ExpandPipeline.h"
#include "tessel/Predict/Predict.h"
#include "tessel/Import/OnnxImporter.h"
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
#include "llvm/Support/WithColor.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include "tessel/support/Checked.h"

#include <cmath>
#include <numeric>

using namespace llvm;

namespace tessel::driver {

char DriverError::ID = 0;

void DriverError::log(raw_ostream &os) const {
  if (diagnostics)
    os << StringRef(message).rtrim('\n');
  else
    os << kTool << ": error: " << message;
}

Error fail(const Twine &message) {
  return make_error<DriverError>(message.str());
}

std::string Message::str() const {
  switch (kind) {
  case Warning:
    return (kTool + ": warning: " + text + "\n").str();
  case Remark:
    return (kTool + ": remark: " + text + "\n").str();
  case Text:
    break;
  }
  return text;
}

std::string Reports::str() const {
  return plan + parameters + collectives + memory + pipeline + zero + gemini +
         prediction;
}

std::unique_ptr<mlir::MLIRContext> createContext() {
  mlir::DialectRegistry registry;
  mlir::tessel::registerAllDialects(registry);
  auto context = std::make_unique<mlir::MLIRContext>(registry);
  context->loadAllAvailableDialects();
  // Each op-anchored diagnostic would otherwise carry a note printing its
  // op, and printing one op verifies the whole module first: on a 7 B
  // model, the propagation's remarks alone spent 84 % of a compile there.
  // tesselc's messages name the op by its ONNX node instead.
  context->printOpOnDiagnostic(false);
  return context;
}

namespace {

// The key on an imported module that records where its weights are.
constexpr StringLiteral kModelAttr =
    mlir::tessel::TesselDialect::kModelPathAttrName;

// Mesh: OnnxPlan.h.

class Compilation {
public:
  Compilation(mlir::MLIRContext &context, const CompileOptions &options,
              MessageHandler onMessage, mlir::ModuleOp importedBefore = nullptr)
      : context(context), o(options), onMessage(onMessage),
        importedBefore(importedBefore),
        handler(&context, [this](mlir::Diagnostic &d) { return handle(d); }) {
  }

  Expected<CompileResult> run();

private:
  // The phases, in order.
  Error checkOptions();
  Error load();
  Error plan();
  Error configureTraining();
  Error runPipeline();
  mlir::tessel::FusionOptions fusionOptions() const;
  Error emitIr();
  Error emitPlan();
  Error emitOnnx();
  /// Writes to -o, or into the result's text with -o "" or "-".
  Error writeOutput(function_ref<void(raw_ostream &)> write);
  Error exportArtifact();

  // The steps of the phases.
  Error configurePlugin();
  Error configureHybrid(HybridOptions &h);
  Error configurePipeline(mlir::tessel::TrainingOptions &t);
  Error configureInference();
  Error configureStageSplit(StringRef stages, int chunks, bool train,
                            mlir::tessel::StageSplitPassOptions &split);
  Error agree(StringRef key, const std::string &option, StringRef flag,
              const std::string &value);
  Error loadMlir();
  Error selectEntry();
  void addOmittedAxes(const mlir::tessel::Plan &plan, Mesh &mesh);
  void warnIfNothingSharded(const Mesh &mesh);
  void makeReports();
  Error predict();
  Expected<mlir::tessel::ImportedModel> importModel(StringRef path);

  /// The MLIR errors so far, as the error of the phase that failed.
  Error diagnosed() {
    return make_error<DriverError>(std::exchange(errors, ""), true);
  }
  Error fail(const Twine &message) {
    flushErrors();
    return driver::fail(message);
  }
  void flushErrors() {
    if (!errors.empty())
      text(std::exchange(errors, ""));
  }
  void warn(const Twine &text) {
    onMessage({Message::Warning, text.str()});
  }
  void remark(const Twine &text) {
    onMessage({Message::Remark, text.str()});
  }
  void text(std::string text) {
    if (!text.empty())
      onMessage({Message::Text, std::move(text)});
  }
  /// Passes warn where the program they make costs more than it should (a
  /// reshape that gathers a split; docs/propagation.md); errors are kept
  /// for the phase's DriverError, as MLIR's default handler prints them.
  mlir::LogicalResult handle(mlir::Diagnostic &d) {
    std::string line;
    raw_string_ostream os(line);
    if (!isa<mlir::UnknownLoc>(d.getLocation()))
      os << d.getLocation() << ": ";
    if (d.getSeverity() == mlir::DiagnosticSeverity::Warning)
      warn(os.str() + d.str());
    else if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
      errors += os.str() + "error: " + d.str() + "\n";
    return mlir::success();
  }
  bool training() const { return o.train || o.emit == Emit::Autodiff; }
  /// --predict without -o (or another --emit): the prediction is the
  /// result, no artifact is written and no weight's bytes read.
  bool predictOnly() const {
    return o.predict && o.emit == Emit::Artifact && o.output.empty();
  }
  bool hasMesh() { return !(*module).getOps<mlir::tessel::MeshOp>().empty(); }
  /// The ranks of the module's mesh (1 without one).
  int64_t meshRanks() {
    for (auto mesh : (*module).getOps<mlir::tessel::MeshOp>())
      return mesh.getNumDevices();
    return 1;
  }

  mlir::MLIRContext &context;
  CompileOptions o;
  MessageHandler onMessage;
  /// compile()'s `imported`: cloned by load() instead of importing.
  mlir::ModuleOp importedBefore;
  std::string errors;
  mlir::ScopedDiagnosticHandler handler;

  std::unique_ptr<::tessel::ArtifactDir> artifactDir;
  std::string out;
  /// --plugin, and hybrid's options with the plugin made of them.
  const Plugin *plugin = nullptr;
  std::optional<HybridOptions> hybrid;
  Plugin hybridPlugin{};
  /// Whether the mesh was made by --plugin hybrid:... (for the remarks).
  bool meshFromPlugin = false;
  std::optional<int64_t> deviceLimit;

  mlir::OwningOpRef<mlir::ModuleOp> module, gradsModule, evalModule;
  std::unique_ptr<mlir::tessel::WeightTable> weights;
  std::string weightsFrom;
  std::vector<mlir::tessel::PlanRule> stageRules;
  /// The plan applied, with the mesh it ran on (--emit=plan).
  mlir::tessel::Plan applied;
  int64_t ppSize = 0;
  std::optional<mlir::tessel::TrainingOptions> trainingOptions;
  /// An inference step pipelined over the pp axis.
  std::optional<mlir::tessel::InferenceOptions> inferenceOptions;
  mlir::tessel::TrainingInfoOptions loss;
  CompileResult result;
};

Expected<CompileResult> Compilation::run() {
  for (Error (Compilation::*phase)() :
       {&Compilation::checkOptions, &Compilation::load, &Compilation::plan,
        &Compilation::configureTraining, &Compilation::runPipeline})
    if (Error err = (this->*phase)())
      return std::move(err);
  makeReports();
  if (Error err = predict())
    return std::move(err);
  if (Error err = predictOnly()              ? Error::success()
                  : o.emit == Emit::Artifact ? exportArtifact()
                  : o.emit == Emit::Plan   ? emitPlan()
                  : o.emit == Emit::Onnx || !o.printText ? Error::success()
                                                         : emitIr())
    return std::move(err);
  flushErrors();
  result.module = std::move(module);
  return std::move(result);
}

/// Everything that can be checked before any work: the inputs the phase
/// needs, the files to write, the options that go together.
Error Compilation::checkOptions() {
  if (o.input.empty())
    switch (o.emit) {
    case Emit::Mlir:
      return fail(
          "--emit=mlir needs an input model (tesselc model.onnx --emit=mlir)");
    case Emit::Autodiff:
      return fail("--emit=autodiff needs an input model");
    case Emit::Propagated:
    case Emit::Partitioned:
    case Emit::Plan:
    case Emit::Onnx:
      return fail("no input file (see --help)");
    case Emit::Artifact:
      return fail(
          "no input file; give a model, or --emit=schedule (see --help)");
    case Emit::Schedule:
      break;
    }
  if (o.emit == Emit::Onnx &&
      (o.output.empty() || o.output == "-" ||
       StringRef(o.input).ends_with(".mlir")))
    return fail("--emit=onnx writes an ONNX model with the plan's "
                "annotations: give an .onnx model and -o FILE.onnx");
  if (o.planExhaustive && o.plan != "auto")
    return fail("--plan-exhaustive is how --plan=auto searches: add "
                "--plan=auto (with --train and --devices N)");
  if (o.plan == "onnx" && StringRef(o.input).ends_with(".mlir"))
    return fail("--plan=onnx reads an ONNX model's sharding annotations; '" +
                o.input + "' is tessel IR");
  if (o.emit == Emit::Artifact && o.output == "-")
    return fail("-o -: an artifact is a directory of files (one program and "
                "weights file per rank), it cannot go to stdout; give a "
                "directory name, e.g. -o model.tsl, or print IR with "
                "--emit=mlir");

  // The artifact's directory first: an unusable -o fails before any work.
  out = o.output;
  if (predictOnly()) {
    // --predict alone writes nothing: it needs no weight's bytes.
  } else if (o.emit == Emit::Artifact) {
    if (out.empty()) {
      SmallString<128> path(o.input);
      sys::path::replace_extension(path, "tsl");
      out = sys::path::filename(path).str();
    }
    auto prepared = ::tessel::ArtifactDir::prepare(out);
    if (!prepared)
      return fail(toString(prepared.takeError()));
    artifactDir = std::move(*prepared);
  } else if (!out.empty() && out != "-") {
    if (std::string error = ::tessel::unwritable("-o", out); !error.empty())
      return fail(error);
  }

  if (o.precision && !training())
    return fail("--precision " + *o.precision +
                " is for training: add --train");
  for (auto [flag, patterns] :
       {std::pair("trainable", &o.trainable), std::pair("frozen", &o.frozen)})
    if (!patterns->empty() && !training())
      return fail(Twine("--") + flag + " " + patterns->front() +
                  " is for training: add --train");
  if (Error err = configurePlugin())
    return err;
  // Gemini's options: with --plugin gemini only.
  if (!o.deviceMemoryLimit.empty() || o.chunkMb) {
    const char *flag =
        !o.deviceMemoryLimit.empty() ? "--device-memory-limit" : "--chunk-mb";
    if (!plugin || !plugin->gemini)
      return fail(std::string(flag) + " is for --plugin gemini (got " +
                  (plugin ? "--plugin " + o.plugin
                          : std::string("no --plugin")) +
                  ")");
  }
  if (!o.deviceMemoryLimit.empty()) {
    deviceLimit = parseByteSize(o.deviceMemoryLimit);
    if (!deviceLimit || *deviceLimit == 0)
      return fail("--device-memory-limit '" + o.deviceMemoryLimit +
                  "' is not a size in bytes > 0 (e.g. 2GiB, 512MiB, 1.5GB, "
                  "1e9)");
  }
  const double chunkMb = o.chunkMb.value_or(32.0);
  if (!(chunkMb > 0) || !std::isfinite(chunkMb))
    return fail("--chunk-mb must be a number > 0 (got " +
                formatv("{0}", format("%g", chunkMb)).str() + ")");
  if (o.fsdpPrefetch && (!plugin || plugin->zeroStage != 3 || plugin->gemini))
    return fail("--fsdp-prefetch is for --plugin fsdp");
  if (o.fsdpPrefetch.value_or(2) < 0)
    return fail("--fsdp-prefetch must be >= 0 (got " +
                std::to_string(*o.fsdpPrefetch) + ")");
  return Error::success();
}

/// --plugin: the named option set, checked before any work; hybrid's
/// options complete --mesh, --plan and --precision.
Error Compilation::configurePlugin() {
  if (o.plugin.empty())
    return Error::success();
  auto [head, options] = StringRef(o.plugin).split(':');
  plugin = findPlugin(head);
  if (!plugin)
    return fail("unknown --plugin '" + o.plugin + "' (known: " +
                pluginNames() + "; tesselc --list-plugins)");
  if (plugin->name == "hybrid") {
    auto parsed =
        parseHybridOptions(StringRef(o.plugin).drop_front(head.size()));
    if (!parsed)
      return fail(toString(parsed.takeError()));
    hybrid = *parsed;
  } else if (StringRef(o.plugin).contains(':')) {
    return fail("--plugin " + head + " takes no options (got '" + o.plugin +
                "'); hybrid:KEY=VALUE,... does");
  }
  if (!training())
    return fail("--plugin " + o.plugin + " is for training: add --train");
  if (hybrid) {
    if (Error err = configureHybrid(*hybrid))
      return err;
    hybridPlugin = *plugin;
    hybridPlugin.name = o.plugin;
    hybridPlugin.zeroStage = hybrid->zero;
    plugin = &hybridPlugin;
    return Error::success();
  }
  if (o.mesh.empty() && o.plan.empty())
    return fail("--plugin " + o.plugin +
                " needs a mesh with a dp axis: give --mesh dp=N");
  // The plugin's default plan: the batch over dp.
  if (o.plan.empty())
    o.plan = "dp";
  return Error::success();
}

/// --plugin hybrid:...'s options against a flag that says the same: one
/// clear error when both are given and differ.
Error Compilation::agree(StringRef key, const std::string &option,
                         StringRef flag, const std::string &value) {
  if (option.empty() || value.empty() || option == value)
    return Error::success();
  return fail("--plugin " + o.plugin + " contradicts --" + flag + " " + value +
              ": " + key + "=" + option + " in the plugin; give one of them");
}

/// --plugin hybrid:...: the mesh dp x tp x pp from its options, or its
/// options checked against --mesh (an axis --mesh leaves out has size 1);
/// the default plan (Megatron's tp split with tp > 1, else the batch over
/// dp); its precision.
Error Compilation::configureHybrid(HybridOptions &h) {
  struct Axis {
    const char *name;
    int64_t *size;
  } axes[] = {{"dp", &h.dp}, {"tp", &h.tp}, {"pp", &h.pp}};
  if (!o.mesh.empty()) {
    auto parsed = mlir::tessel::parseMeshSpec(o.mesh);
    if (!parsed)
      return fail(toString(parsed.takeError()));
    for (Axis &a : axes) {
      int64_t size = 1;
      bool named = false;
      for (const auto &[name, n] : *parsed)
        if (name == a.name) {
          size = n;
          named = true;
        }
      if (*a.size && *a.size != size)
        return fail(
            "--plugin " + o.plugin + " contradicts --mesh " + o.mesh + ": " +
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
    o.mesh = "dp=" + std::to_string(h.dp);
    if (h.tp > 1)
      o.mesh += ",tp=" + std::to_string(h.tp);
    if (h.pp > 1)
      o.mesh += ",pp=" + std::to_string(h.pp);
  }
  if (o.plan.empty())
    o.plan = h.tp > 1 ? "megatron" : "dp";
  if (!h.precision.empty()) {
    if (Error err = agree("precision", h.precision, "precision",
                          o.precision.value_or("")))
      return err;
    o.precision = h.precision;
  }
  if (h.zero && h.dp == 1) {
    remark("--plugin " + o.plugin + ": zero=" + Twine(h.zero) +
           " with dp=1 shards nothing (ZeRO splits over dp): every state "
           "stays whole, as zero=0");
    h.zero = 0;
  }
  return Error::success();
}

Expected<mlir::tessel::ImportedModel>
Compilation::importModel(StringRef path) {
  mlir::tessel::OnnxImportOptions options;
  options.training = training();
  for (const std::string &spec : o.shapes)
    if (Error err = mlir::tessel::parseInputShape(spec, options))
      return std::move(err);
  return mlir::tessel::importOnnxFile(context, path, options);
}

/// The load phase: the ONNX import or the .mlir parse (and its weights),
/// then the function to compile.
Error Compilation::load() {
  if (importedBefore) {
    // An earlier compile's load of the same file: its copy, and no weight
    // table (compile()'s contract: no artifact).
    if (o.emit == Emit::Artifact && !predictOnly())
      return fail("an artifact needs the weights: compile '" + o.input +
                  "' from the file, not from an earlier load of it");
    module = mlir::OwningOpRef<mlir::ModuleOp>(importedBefore.clone());
    return selectEntry();
  }
  if (StringRef(o.input).ends_with(".mlir")) {
    if (Error err = loadMlir())
      return err;
  } else {
    if (!o.entry.empty())
      return fail("--entry is for a .mlir input with several functions; an "
                  "ONNX model has one graph");
    auto imported = importModel(o.input);
    if (!imported)
      return fail(toString(imported.takeError()));
    module = std::move(imported->module);
    weights = std::move(imported->weights);
    SmallString<256> abs(o.input);
    sys::fs::make_absolute(abs);
    (*module)->setAttr(kModelAttr, mlir::StringAttr::get(&context, abs));
  }
  return selectEntry();
}

Error Compilation::loadMlir() {
  // The file read once: its bracket depth checked before MLIR's parser,
  // which recurses once per level (dialects/tessel/TextNesting.h).
  auto file = MemoryBuffer::getFileOrSTDIN(o.input);
  if (!file)
    return fail("cannot open '" + o.input + "': " + file.getError().message());
  if (std::string err = mlir::tessel::checkTextNesting((*file)->getBuffer());
      !err.empty())
    return fail(o.input + ": " + err);
  {
    SourceMgr sm;
    sm.AddNewSourceBuffer(std::move(*file), SMLoc());
    std::string parsed;
    raw_string_ostream os(parsed);
    mlir::SourceMgrDiagnosticHandler sourceHandler(sm, &context, os);
    module = mlir::parseSourceFile<mlir::ModuleOp>(sm, &context);
    if (!module)
      return make_error<DriverError>(parsed, true);
    mlir::tessel::nameArgumentsFromSource(module->getOperation(), sm);
    text(parsed);
  }
  if (auto from = (*module)->getAttrOfType<mlir::StringAttr>(kModelAttr))
    weightsFrom = from.str();
  StringRef model = o.weights;
  if (!model.empty())
    weightsFrom = model.str();
  if (model.ends_with(".safetensors") || model.ends_with(".npz")) {
    // Tensors by name, checked against the program before any work.
    auto table = model.ends_with(".npz")
                     ? ::tessel::readNpzWeights(model)
                     : ::tessel::readSafetensorsWeights(model);
    if (!table)
      return fail(toString(table.takeError()));
    if (Error err = ::tessel::checkWeights(*module, **table, model))
      return fail(toString(std::move(err)));
    weights = std::move(*table);
  } else if (!model.empty()) {
    // An ONNX model's initializers, its graph not imported (any model
    // holding those tensors will do). A program imported from that model
    // may also name constants the import folded: then the whole model is
    // imported at export, as before.
    auto table = mlir::tessel::readOnnxInitializers(context, model);
    if (!table)
      return fail("--weights: " + toString(table.takeError()));
    bool all = true;
    module->walk([&](mlir::tessel::WeightOp w) {
      if (!(*table)->lookup(w.getName()))
        all = false;
    });
    if (all) {
      if (Error err = ::tessel::checkWeights(*module, **table, model))
        return fail(toString(std::move(err)));
      weights = std::move(*table);
    }
  }
  return Error::success();
}

/// The function to compile: the one --entry names (the others are dropped),
/// or the module's only function.
Error Compilation::selectEntry() {
  std::vector<mlir::func::FuncOp> fns;
  for (auto fn : module->getOps<mlir::func::FuncOp>())
    if (!fn.isExternal())
      fns.push_back(fn);
  std::string names;
  for (auto fn : fns)
    names += (names.empty() ? "@" : ", @") + fn.getSymName().str();
  if (o.entry.empty()) {
    if (fns.size() > 1)
      return fail("'" + o.input + "' has " + std::to_string(fns.size()) +
                  " functions (" + names + "): pick one with --entry NAME");
    return Error::success();
  }
  auto it = llvm::find_if(
      fns, [&](mlir::func::FuncOp fn) { return fn.getSymName() == o.entry; });
  if (it == fns.end())
    return fail("--entry " + o.entry + ": '" + o.input +
                "' has no function @" + o.entry + " (it has " +
                (names.empty() ? std::string("none") : names) + ")");
  for (auto fn : fns)
    if (fn != *it && !fn.isPrivate())
      fn.erase();
  (*it).setPublic();
  return Error::success();
}

/// --mesh gives the mesh; the axes the plan names (in its mesh or its rules)
/// that --mesh omits get size 1, with a remark: `--mesh tp=4` runs a dp x tp
/// plan as tp alone. (Without --mesh, a rule's axis missing from the plan's
/// own mesh stays an error: a typo, most likely.)
void Compilation::addOmittedAxes(const mlir::tessel::Plan &plan, Mesh &mesh) {
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
    remark("mesh axis '" + axis + "' of the plan is not in " +
           (meshFromPlugin
                ? "the mesh " + o.mesh + " of --plugin " + o.plugin
                : "--mesh " + o.mesh) +
           ": it has size 1");
  }
}

/// A mesh of several ranks on which no tensor is split runs the whole
/// program on every rank: most likely not what was meant.
void Compilation::warnIfNothingSharded(const Mesh &mesh) {
  std::vector<int64_t> tensorAxes;
  std::string sizes;
  for (const auto &[name, size] : mesh) {
    // The pipeline axis splits the program into stages, not tensors.
    if (name != mlir::tessel::kPipelineAxis)
      tensorAxes.push_back(size);
    sizes += (sizes.empty() ? "" : ",") + name + "=" + std::to_string(size);
  }
  // The mesh was checked when parsed (at most 2^31 devices).
  const int64_t ranks =
      ::tessel::checkedProduct(tensorAxes).value_or(INT64_MAX);
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
  module->walk([&](mlir::Operation *op) {
    if (splitsOverSeveral(op->getAttr(key)))
      sharded = true;
    if (auto fn = dyn_cast<mlir::func::FuncOp>(op))
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        if (splitsOverSeveral(fn.getArgAttr(i, key)))
          sharded = true;
    return sharded ? mlir::WalkResult::interrupt()
                   : mlir::WalkResult::advance();
  });
  const bool staged = tensorAxes.size() != mesh.size();
  if (!sharded)
    warn("the mesh " + sizes + " has " + Twine(ranks) +
         (staged ? " ranks per pipeline stage" : " ranks") +
         " but the plan splits no tensor over an axis of size > 1: " +
         (staged ? "each stage's program is replicated on its ranks"
                 : "the whole program is replicated on every rank"));
}

/// The plan phase: the mesh, then the specs the plan's rules give.
Error Compilation::plan() {
  if (!o.mesh.empty() || !o.plan.empty()) {
    if (hasMesh())
      return fail("'" + o.input +
                  "' already has a mesh; --mesh and --plan apply to "
                  "unannotated models");
    mlir::tessel::Plan plan;
    // --mesh, parsed once: --plan=onnx matches its annotations to it.
    std::optional<Mesh> given;
    if (o.plan == "onnx") {
      auto annotations = mlir::tessel::readOnnxShardingAnnotations(o.input);
      if (!annotations)
        return fail(toString(annotations.takeError()));
      if (!o.mesh.empty()) {
        auto parsed = mlir::tessel::parseMeshSpec(o.mesh);
        if (!parsed)
          return fail(toString(parsed.takeError()));
        given = std::move(*parsed);
      }
      std::string chosen;
      raw_string_ostream os(chosen);
      auto read = planFromOnnxAnnotations(
          *annotations, sys::path::filename(o.input), given, os);
      text(chosen);
      if (!read)
        return fail(toString(read.takeError()));
      plan = std::move(*read);
    } else if (!o.plan.empty()) {
      std::string chosen;
      raw_string_ostream os(chosen);
      auto loaded = mlir::tessel::loadPlan(o.plan, *module, os);
      text(chosen);
      if (!loaded)
        return fail(toString(loaded.takeError()));
      plan = std::move(*loaded);
    }
    if (!o.mesh.empty() && !given) {
      auto parsed = mlir::tessel::parseMeshSpec(o.mesh);
      if (!parsed)
        return fail(toString(parsed.takeError()));
      given = std::move(*parsed);
    }
    Mesh mesh = given ? *given : plan.mesh;
    if (mesh.empty())
      return fail("no mesh: give --mesh (e.g. --mesh dp=2,tp=2) or a plan "
                  "with 'mesh'");
    if (plugin && !hybrid)
      if (std::string error = checkPluginMesh(*plugin, mesh); !error.empty())
        return fail(error);
    if (!o.mesh.empty())
      addOmittedAxes(plan, mesh);
    applied = plan;
    applied.mesh = mesh;
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
    if (Error err = mlir::tessel::applyPlan(*module, mesh, plan, &unmatched,
                                            &result.wholeBatches))
      return fail(toString(std::move(err)));
    for (const std::string &u : unmatched)
      warn("plan rule " + u);
    warnIfNothingSharded(mesh);
  }
  if (o.emit == Emit::Onnx)
    return emitOnnx();
  if (failed(mlir::verify(*module)))
    return diagnosed();
  return Error::success();
}

/// Pipeline parallelism (docs/pipeline.md): a `pp` mesh axis with --train
/// turns on the stage split and the per-rank lowering.
Error Compilation::configurePipeline(mlir::tessel::TrainingOptions &t) {
  std::string schedule = o.schedule, stages = o.stages.value_or("");
  int chunks = o.chunks;
  if (hybrid) {
    // hybrid's schedule= and chunks= are --schedule's and --chunks'; its
    // stages the plan's rules, else --stages auto.
    if (Error err = agree("schedule", hybrid->schedule, "schedule", schedule))
      return err;
    if (!hybrid->schedule.empty())
      schedule = hybrid->schedule;
    if (hybrid->chunks) {
      if (Error err =
              agree("chunks", std::to_string(hybrid->chunks), "chunks",
                    chunks != 1 ? std::to_string(chunks) : ""))
        return err;
      chunks = hybrid->chunks;
    }
  }
  // A pp axis without stage rules is cut by --stages auto; one of size 1
  // without any is no pipeline (the mesh's pp=1, as hybrid:pp=1 is).
  if (ppSize > 1 && stageRules.empty() && stages.empty())
    stages = "auto";
  if (ppSize == 1 && stageRules.empty() && stages.empty() && schedule.empty())
    return Error::success();
  if (ppSize == 0) {
    if (!stageRules.empty())
      return fail("the plan has stage rules but the mesh no 'pp' axis (e.g. "
                  "--mesh pp=2)");
    if (!schedule.empty() || stages == "auto")
      return fail("--schedule and --stages auto with --train need a 'pp' "
                  "mesh axis (e.g. --mesh pp=2)");
    return Error::success();
  }
  if (Error err = configureStageSplit(stages, chunks, true, t.stageSplit))
    return err;
  if (t.optimizer.clipGradNorm > 0 || t.optimizer.gradNorm)
    return fail(std::string(t.optimizer.gradNorm ? "--grad-norm"
                                                 : "--clip-grad-norm") +
                " is not supported with a pipeline yet (the norm spans every "
                "stage)");
  if (t.recompute)
    return fail("--recompute is not supported with a pipeline yet");
  t.pipelined = true;
  t.pipeline.schedule = schedule.empty() ? "1f1b" : schedule;
  t.pipeline.scheduleFile = o.scheduleFile;
  t.pipeline.chunks = chunks;
  return Error::success();
}

/// The stage split of a pipeline over the pp axis, training's and
/// inference's: `stages` is --stages ("auto", or empty for the plan's stage
/// rules), `chunks` the stages per rank; `train` says "with --train" in
/// the message that refuses another --stages.
Error Compilation::configureStageSplit(
    StringRef stages, int chunks, bool train,
    mlir::tessel::StageSplitPassOptions &split) {
  if (!stages.empty() && stages != "auto")
    return fail(Twine("--stages") + (train ? " with --train" : "") +
                " takes 'auto' (the number of stages is pp times --chunks); "
                "got '" + stages + "'");
  const bool autoSplit = stages == "auto";
  if (autoSplit && !stageRules.empty())
    return fail("--stages auto and the plan's stage rules: give one of them");
  if (!autoSplit && stageRules.empty())
    return fail("--mesh with pp=" + std::to_string(ppSize) +
                " needs stage rules in the plan (- node: \"/h.1*\" / "
                "stage: 1) or --stages auto");
  if (chunks < 1)
    return fail("--chunks must be at least 1, got " + std::to_string(chunks));
  split.stages = ppSize * chunks;
  split.autoSplit = autoSplit;
  // --stages auto balances the ops' predicted seconds on --cluster's device,
  // the cost model --predict and --plan=auto use.
  if (autoSplit)
    split.cluster = o.cluster;
  for (const mlir::tessel::PlanRule &r : stageRules)
    split.rules.push_back(r.pattern + "=" + std::to_string(r.stage));
  return Error::success();
}

/// Pipelines for inference (docs/pipeline.md): a `pp` axis without --train
/// cuts the forward graph into stages (the plan's stage rules, else
/// --stages auto), splits the batch into microbatches whose outputs are
/// concatenated, and runs the schedule's forward actions: each rank holds
/// its stages' weights, and every rank returns the outputs.
Error Compilation::configureInference() {
  if (ppSize <= 1 && stageRules.empty())
    return Error::success();
  if (ppSize == 0)
    return fail("the plan has stage rules but the mesh no 'pp' axis (e.g. "
                "--mesh pp=2)");
  std::string stages = o.stages.value_or("");
  if (stages.empty() && stageRules.empty())
    stages = "auto";
  mlir::tessel::InferenceOptions in;
  if (Error err = configureStageSplit(stages, o.chunks, false, in.stageSplit))
    return err;
  in.stageSplit.forwardOnly = true;
  in.pipeline.schedule = o.schedule.empty() ? "gpipe" : o.schedule;
  in.pipeline.chunks = o.chunks;
  in.pipeline.forwardOnly = true;
  // Microbatches: --microbatches, else the most, up to pp, that divide each
  // dp rank's rows of every input (1 for a batch of 1).
  int64_t k = o.microbatches.value_or(0);
  if (!k) {
    int64_t rows = 0;
    for (auto fn : module->getOps<mlir::func::FuncOp>())
      if (!fn.isExternal() && fn.isPublic())
        for (mlir::Type t : fn.getArgumentTypes())
          if (auto rt = dyn_cast<mlir::RankedTensorType>(t);
              rt && rt.getRank() >= 1 && !rt.isDynamicDim(0))
            rows = std::gcd(rows, rt.getDimSize(0));
    for (auto mesh : module->getOps<mlir::tessel::MeshOp>())
      for (auto [name, size] :
           llvm::zip(mesh.getAxisNames(), mesh.getAxisSizes()))
        if (cast<mlir::StringAttr>(name).getValue() == "dp" && rows &&
            rows % size == 0)
          rows /= size;
    k = 1;
    for (int64_t d = std::min<int64_t>(ppSize, std::max<int64_t>(rows, 1));
         d > 1; --d)
      if (rows % d == 0) {
        k = d;
        break;
      }
  }
  if (k < 1)
    return fail("--microbatches must be at least 1, got " +
                std::to_string(k));
  in.microbatch.count = k;
  in.microbatch.concatOutputs = true;
  inferenceOptions = in;
  return Error::success();
}

/// The training step's options (--train, or --emit=autodiff).
Error Compilation::configureTraining() {
  if (!training())
    return configureInference();
  mlir::tessel::TrainingOptions t;
  t.loss.kind = o.loss;
  t.loss.output = o.lossOutput;
  t.classify.trainable.assign(o.trainable.begin(), o.trainable.end());
  t.classify.frozen.assign(o.frozen.begin(), o.frozen.end());
  mlir::tessel::OptimizerPassOptions &opt = t.optimizer;
  opt.kind = o.optimizer;
  opt.lr = o.lr;
  opt.eps = o.eps;
  opt.weightDecay =
      o.weightDecay.value_or(o.optimizer == "adamw" ? 0.01 : 0.0);
  opt.momentum = o.momentum;
  opt.nesterov = o.nesterov;
  opt.lrSchedule = o.lrSchedule;
  opt.warmupSteps = o.warmupSteps;
  opt.totalSteps = o.totalSteps;
  opt.clipGradNorm = o.clipGradNorm;
  opt.gradNorm = o.gradNorm;
  t.microbatch.count = o.microbatches.value_or(1);
  if (hybrid && hybrid->microbatches) {
    if (Error err = agree("microbatches", std::to_string(hybrid->microbatches),
                          "microbatches",
                          o.microbatches ? std::to_string(*o.microbatches)
                                         : ""))
      return err;
    t.microbatch.count = hybrid->microbatches;
  }
  if (o.bucketMb < 0)
    return fail("--bucket-mb must be >= 0 (got " + std::to_string(o.bucketMb) +
                ")");
  t.buckets.bucketMb = o.bucketMb;
  t.gradHandler = o.gradHandler;
  t.recompute = o.recompute;
  if (plugin) {
    t.zero.stage = plugin->zeroStage;
    t.gemini = plugin->gemini;
    t.geminiChunks.chunkBytes = std::max<int64_t>(
        1, static_cast<int64_t>(o.chunkMb.value_or(32.0) * (1 << 20)));
    t.geminiPlacement.deviceMemoryLimit = deviceLimit.value_or(0);
    // Gemini places its chunks around synchronous gathers.
    t.gatherAtUse.prefetch = plugin->gemini ? 0 : o.fsdpPrefetch.value_or(2);
    t.asyncReduceScatter = o.zeroAsyncReduceScatter;
  }
  const std::string precision = o.precision.value_or("fp32");
  if (precision != "fp32" && precision != "bf16" && precision != "fp16")
    return fail("unknown --precision '" + precision + "' (fp32, bf16, fp16)");
  if (precision != "fp32")
    t.precision = precision;
  // Loss scaling is fp16's (bf16 has f32's range); asked for, any precision
  // gets it.
  const double lossScale = o.lossScale.value_or(65536.0);
  if (lossScale < 0 || !std::isfinite(lossScale))
    return fail("--loss-scale must be a finite number >= 0 (got " +
                std::to_string(lossScale) + ")");
  if (o.lossScaleGrowthInterval < 1)
    return fail("--loss-scale-growth-interval must be >= 1 (got " +
                std::to_string(o.lossScaleGrowthInterval) + ")");
  // A model whose parameters are fp16 trains with dynamic loss scaling too,
  // as PyTorch AMP's fp16 does with its GradScaler (docs/precision.md).
  bool f16Parameters = false;
  std::string f64Weight;
  if (module)
    module->walk([&](mlir::tessel::WeightOp w) {
      f16Parameters |= w.getType().getElementType().isF16();
      if (f64Weight.empty() && w.getType().getElementType().isF64())
        f64Weight = w.getName().str();
    });
  // f64 runs inference only: the gradient and optimizer kernels compute f32
  // and the halves (docs/precision.md).
  if (!f64Weight.empty())
    return fail("--train: weight '" + f64Weight +
                "' is f64, and Tessel trains f32, bf16 and fp16 models (f64 "
                "ones run inference only); export the model in f32 to train "
                "it");
  if (precision == "fp16" || o.lossScale || f16Parameters)
    opt.lossScale = lossScale;
  opt.growthInterval = o.lossScaleGrowthInterval;
  if (Error err = configurePipeline(t))
    return err;
  if (o.predictExpand) {
    if (!o.output.empty() || (o.emit == Emit::Artifact && !o.predict) ||
        (o.emit != Emit::Artifact && o.emit != Emit::Partitioned))
      return fail("--predict-expand writes no artifact: it goes with "
                  "--predict (or --emit=partitioned, to see the copies' "
                  "program), without -o");
    // Interleaved schedules need a multiple of pp microbatches: those
    // compile whole.
    if (t.pipelined && t.pipeline.chunks == 1 &&
        t.microbatch.count > mlir::tessel::kExpandedPipelineCopies) {
      t.microbatch.copies = mlir::tessel::kExpandedPipelineCopies;
      result.expandToMicrobatches = t.microbatch.count;
    }
  }
  SmallVector<StringRef, 2> b;
  StringRef(o.betas).split(b, ',');
  if (b.size() != 2 || b[0].trim().getAsDouble(opt.beta1) ||
      b[1].trim().getAsDouble(opt.beta2))
    return fail("--betas needs two numbers, e.g. --betas 0.9,0.999 (got '" +
                o.betas + "')");
  trainingOptions = t;
  loss = mlir::tessel::summarizeLoss(*module, o.loss, o.lossOutput);
  if (t.withOptimizer) {
    loss.optimizer = opt.kind;
    loss.lr = opt.lr;
    loss.lrSchedule = opt.lrSchedule;
    loss.warmupSteps = opt.warmupSteps;
    loss.totalSteps = opt.totalSteps;
  }
  return Error::success();
}

/// The pass pipeline to the phase asked for (and --grads-program's: the
/// same step without the optimizer, compiled apart).
mlir::tessel::FusionOptions Compilation::fusionOptions() const {
  mlir::tessel::FusionOptions f;
  f.attention = !o.noFuseAttention;
  f.elementwise = !o.noFuseElementwise;
  return f;
}

Error Compilation::runPipeline() {
  if (o.gradsProgram) {
    if (!o.train || o.emit != Emit::Artifact)
      return fail("--grads-program needs --train and an artifact");
    if (trainingOptions->pipelined)
      return fail("--grads-program is not supported with a pipeline yet "
                  "(compile the gradient program without the pp axis)");
    gradsModule = module->clone();
    mlir::PassManager pm(&context);
    mlir::tessel::TrainingOptions t = *trainingOptions;
    t.withOptimizer = false;
    mlir::tessel::buildCompilePipeline(
        pm, !(*gradsModule).getOps<mlir::tessel::MeshOp>().empty(),
        mlir::tessel::CompileStage::Partition, &t, nullptr, fusionOptions());
    if (failed(pm.run(*gradsModule)))
      return diagnosed();
  }
  if (o.evalProgram) {
    if (!o.train || o.emit != Emit::Artifact)
      return fail("--eval-program needs --train and an artifact");
    if (trainingOptions->pipelined)
      return fail("--eval-program is not supported with a pipeline yet "
                  "(compile the evaluation without the pp axis)");
    evalModule = module->clone();
    mlir::PassManager pm(&context);
    mlir::tessel::TrainingOptions t = *trainingOptions;
    // ZeRO, FSDP and Gemini shard what the update keeps (optimizer state,
    // gradients, parameters) over dp: the evaluation has no update, and
    // its parameters are the plan's (whole on every dp rank), filled from
    // the step's sharded states through a checkpoint, which puts each
    // block together from the ranks that hold its parts.
    if (t.zero.stage == 3 || t.gemini)
      llvm::WithColor::warning(llvm::errs(), "tesselc")
          << "--eval-program with --plugin "
          << (t.gemini ? "gemini" : "fsdp")
          << ": the evaluation holds every parameter whole on each dp rank "
             "(the step shards them)\n";
    t.zero.stage = 0;
    t.gemini = false;
    t.lossOnly = true;
    t.withOptimizer = false;
    t.microbatch.count = 1;
    t.recompute = false;
    mlir::tessel::buildCompilePipeline(
        pm, !(*evalModule).getOps<mlir::tessel::MeshOp>().empty(),
        mlir::tessel::CompileStage::Partition, &t, nullptr, fusionOptions());
    if (failed(pm.run(*evalModule)))
      return diagnosed();
  }
  if (o.emit == Emit::Mlir)
    return Error::success();
  mlir::PassManager pm(&context);
  pm.enableVerifier(o.verifyPasses);
  mlir::tessel::CompileStage stage =
      o.emit == Emit::Autodiff     ? mlir::tessel::CompileStage::Autodiff
      : o.emit == Emit::Propagated ? mlir::tessel::CompileStage::Propagate
                                   : mlir::tessel::CompileStage::Partition;
  mlir::tessel::buildCompilePipeline(
      pm, hasMesh(), stage, trainingOptions ? &*trainingOptions : nullptr,
      inferenceOptions ? &*inferenceOptions : nullptr, fusionOptions());
  if (failed(pm.run(*module)))
    return diagnosed();
  return Error::success();
}

void Compilation::makeReports() {
  if (!o.report)
    return;
  Reports &r = result.reports;
  auto print = [&](std::string &into, auto &&printer) {
    raw_string_ostream os(into);
    printer(os);
  };
  print(r.parameters, [&](raw_ostream &os) {
    mlir::tessel::printParameterReport(*module, os);
  });
  print(r.collectives, [&](raw_ostream &os) {
    mlir::tessel::printCollectiveReport(*module, os);
  });
  print(r.memory,
        [&](raw_ostream &os) { mlir::tessel::printMemoryReport(*module, os); });
  print(r.pipeline, [&](raw_ostream &os) {
    mlir::tessel::printPipelineReport(*module, os);
  });
  const bool step = plugin && trainingOptions &&
                    (o.emit == Emit::Artifact || o.emit == Emit::Partitioned);
  if (step)
    print(r.zero, [&](raw_ostream &os) {
      mlir::tessel::printZeroReport(*module, plugin->name, plugin->zeroStage,
                                    os);
    });
  if (step && plugin->gemini)
    print(r.gemini, [&](raw_ostream &os) {
      mlir::tessel::printGeminiReport(*module, os);
    });
}

Error Compilation::predict() {
  if (!o.predict)
    return Error::success();
  if (o.emit != Emit::Artifact && o.emit != Emit::Partitioned)
    return fail("--predict costs the partitioned program: it goes with "
                "--emit=artifact (the default) or --emit=partitioned");
  Expected<::tessel::cost::ClusterSpec> cluster =
      loadCluster(o.cluster, meshRanks());
  if (!cluster)
    return fail(toString(cluster.takeError()));
  // --predict-expand: the step's copies, expanded to all its microbatches.
  mlir::OwningOpRef<mlir::ModuleOp> expanded;
  if (result.expandToMicrobatches) {
    auto e = mlir::tessel::expandPipeline(*module,
                                          result.expandToMicrobatches);
    if (!e)
      return fail(toString(e.takeError()));
    expanded = std::move(*e);
  }
  Expected<mlir::tessel::Prediction> p = mlir::tessel::predictStep(
      expanded ? *expanded : *module, *cluster);
  if (!p)
    return fail(toString(p.takeError()));
  raw_string_ostream os(result.reports.prediction);
  mlir::tessel::printPrediction(*p, *cluster, os, o.explain);
  return Error::success();
}

/// With --print-weights: each weight's dtype, shape, size and origin as
/// comments.
void printWeightTable(const mlir::tessel::WeightTable &weights,
                      raw_ostream &os) {
  os << "// weights: " << weights.size() << "\n";
  for (const auto &w : weights.getWeights()) {
    os << "// weight \"" << w.name << "\" "
       << mlir::tessel::getSafetensorsDType(w.dtype) << " [";
    llvm::interleaveComma(w.shape, os);
    os << "] " << w.getNumBytes() << " bytes "
       << (w.origin == mlir::tessel::WeightInfo::Origin::Initializer
               ? "initializer"
               : "constant");
    if (w.isExternal())
      os << " external " << w.externalPath << "@" << w.offset;
    os << "\n";
  }
}

/// The IR phases' output: the module's text, to -o or to result.text.
Error Compilation::writeOutput(function_ref<void(raw_ostream &)> write) {
  if (out.empty() || out == "-") {
    raw_string_ostream text(result.text);
    write(text);
    return Error::success();
  }
  std::string message;
  std::unique_ptr<ToolOutputFile> file = mlir::openOutputFile(out, &message);
  if (!file)
    return fail(message);
  write(file->os());
  file->keep();
  return Error::success();
}

Error Compilation::emitIr() {
  return writeOutput([&](raw_ostream &os) {
    // --mlir-print-debuginfo: each op's location (after the import its ONNX
    // node name, what a plan's `node:` rule matches) beside it, not as an
    // alias at the end of the file. Without it, the arguments by name.
    mlir::OpPrintingFlags flags;
    if (o.printDebugInfo)
      flags.enableDebugInfo();
    if (flags.shouldPrintDebugInfo())
      flags.useLocalScope();
    mlir::tessel::printWithArgumentNames(module->getOperation(), os, flags);
    os << "\n";
    if (weights && o.printWeights)
      printWeightTable(*weights, os);
  });
}

/// --emit=plan: the plan the compile applied (--plan=auto's choice) as a
/// plan file, with the command that reuses it.
Error Compilation::emitPlan() {
  if (applied.mesh.empty())
    return fail("--emit=plan writes the plan a compile applies: give --plan "
                "(or --plan=auto) or --mesh");
  return writeOutput([&](raw_ostream &os) {
    os << "# The plan tesselc compiled " << sys::path::filename(o.input)
       << " with (tesselc --emit=plan).\n# Reuse it: tesselc "
       << sys::path::filename(o.input) << (o.train ? " --train" : "");
    if (!o.plugin.empty())
      os << " --plugin " << o.plugin;
    if (o.recompute)
      os << " --recompute";
    os << " --plan THIS_FILE\n";
    if (applied.stageRules.empty() && ppSize > 1)
      os << "# Pipeline stages: --stages auto's cut, made again by the same "
            "command;\n# 'node: PATTERN' + 'stage: N' rules set them by hand "
            "(docs/pipeline.md).\n";
    mlir::tessel::printPlan(applied, os);
  });
}

/// --emit=onnx: the input model with the specs the plan gave its weights
/// and inputs (and its stages) as ONNX's sharding annotations.
Error Compilation::emitOnnx() {
  if (applied.mesh.empty())
    return fail("--emit=onnx writes the plan a compile applies: give --plan "
                "or --mesh");
  auto model = mlir::tessel::readOnnxShardingAnnotations(o.input);
  if (!model)
    return fail(toString(model.takeError()));
  mlir::tessel::OnnxShardingAnnotations annotations =
      annotationsFromModule(*module, applied.mesh, stageRules, *model);
  if (Error err =
          mlir::tessel::writeOnnxShardingAnnotations(o.input, annotations, out))
    return fail(toString(std::move(err)));
  text("onnx: wrote " + out + ": " +
       std::to_string(annotations.nodes.size()) +
       " annotated nodes on the mesh " + annotations.mesh + "\n");
  return Error::success();
}

/// The export phase: the artifact directory, its training files and
/// --grads-program's program, swapped in whole.
Error Compilation::exportArtifact() {
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
      return fail("'" + o.input +
                  "' does not say where its weights are: give --weights "
                  "model.onnx");
    auto imported = importModel(weightsFrom);
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
    // External data is read a window at a time when the artifact is
    // written, never mapped whole (docs/scale.md); shapes-only weights fail
    // there, naming the weight.
    if (info->shapesOnly) {
      error = toString(table.getData(*info).takeError());
      return mlir::failure();
    }
    mlir::tessel::WeightData data;
    data.size = info->getNumBytes();
    data.shape.assign(info->shape.begin(), info->shape.end());
    if (info->dtype == mlir::tessel::WeightDType::BF16)
      data.elementType = mlir::BFloat16Type::get(module->getContext());
    else if (info->dtype == mlir::tessel::WeightDType::F16)
      data.elementType = mlir::Float16Type::get(module->getContext());
    if (!info->isExternal()) {
      data.data = info->bytes.data();
      return data;
    }
    data.read = [&table, info](uint64_t offset, size_t size, char *dst,
                               std::string &why) {
      if (llvm::Error err = table.read(*info, offset, size, dst)) {
        why = toString(std::move(err));
        return false;
      }
      return true;
    };
    return data;
  };
  StringRef dir = artifactDir->tempPath();
  mlir::tessel::ExportOptions artifactOptions;
  artifactOptions.displayPath = artifactDir->finalPath().str();
  if (failed(mlir::tessel::exportArtifact(*module, lookup, dir,
                                          artifactOptions)))
    return diagnosed();
  if (trainingOptions) {
    // The source model of --export-onnx: only an ONNX input is the graph the
    // trained tensors go back into (a .mlir may be any program).
    std::string onnx = StringRef(o.input).ends_with(".mlir") ? "" : o.input;
    std::string error =
        ::tessel::writeTrainingFiles(*module, loss, lookup, onnx, dir);
    if (!error.empty())
      return fail(error);
  }
  if (evalModule) {
    mlir::tessel::ExportOptions eo;
    eo.trainableWeightsAsStates = true;
    SmallString<256> eval(dir);
    sys::path::append(eval, "eval");
    if (failed(mlir::tessel::exportArtifact(*evalModule, lookup, eval, eo)))
      return diagnosed();
  }
  if (gradsModule) {
    mlir::tessel::ExportOptions eo;
    eo.gradientWeightsAsStates = true;
    SmallString<256> grads(dir);
    sys::path::append(grads, "grads");
    if (failed(mlir::tessel::exportArtifact(*gradsModule, lookup, grads, eo)))
      return diagnosed();
  }
  if (Error err = artifactDir->commit())
    return fail(toString(std::move(err)));
  result.artifactPath = artifactDir->finalPath().str();
  return Error::success();
}

} // namespace

Expected<CompileResult> compile(mlir::MLIRContext &context,
                                const CompileOptions &options,
                                MessageHandler onMessage,
                                mlir::ModuleOp imported) {
  if (options.emit == Emit::Schedule) {
    if (!options.input.empty())
      return fail("--emit=schedule takes no input model (got '" +
                  options.input +
                  "'); it builds a schedule from --schedule, --stages, "
                  "--microbatches");
    CompileResult result;
    Expected<std::string> text = emitSchedule(options);
    if (!text)
      return text.takeError();
    result.text = std::move(*text);
    return std::move(result);
  }
  if (options.plan == "auto") {
    Expected<AutoPlanResult> choice = chooseAutoPlan(options);
    if (!choice)
      return choice.takeError();
    Expected<CompileResult> result =
        Compilation(context, choice->options, onMessage).run();
    if (result)
      result->reports.plan = std::move(choice->explanation);
    return result;
  }
  return Compilation(context, options, onMessage, imported).run();
}

} // namespace tessel::driver
