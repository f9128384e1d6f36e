//===- Compile.cpp - tesselc: model -> IR -> artifact ---------------------===//
//
// import (ONNX) or parse (.mlir) -> plan (--mesh, --plan) -> propagate ->
// partition -> export. One device is a mesh of size 1: without --mesh the
// same path runs with no mesh and every tensor whole.
//
//===----------------------------------------------------------------------===//

#include "Compile.h"
#include "EmitMlir.h"
#include "TrainingInfo.h"

#include "tessel/Export/CollectiveReport.h"
#include "tessel/Export/ExportArtifact.h"
#include "tessel/Export/MemoryReport.h"
#include "tessel/InitAll.h"
#include "tessel/Plan/Plan.h"
#include "tessel/Transforms/CompilePipeline.h"

#include "dialects/tessel/TesselOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

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
    cl::desc("Device mesh, e.g. --mesh dp=2,tp=2 (overrides the plan's)"),
    cl::cat(tessel::getShardingCategory()));

cl::opt<std::string> planSpec(
    "plan", cl::value_desc("FILE|dp"),
    cl::desc("Sharding plan: a YAML/JSON file of name patterns -> specs, or "
             "the built-in 'dp' (batch over the dp axis)"),
    cl::cat(tessel::getShardingCategory()));

cl::opt<bool> report(
    "report",
    cl::desc("Print, per rank, each collective with its axes and bytes (a "
             "training step's forward and backward apart, with its gradient "
             "buckets), the totals, and the planned peak memory (params, "
             "grads, optimizer state, activations)"),
    cl::init(false), cl::cat(tessel::getShardingCategory()));


cl::opt<bool> train("train",
                    cl::desc("Compile the training step: the loss, its "
                             "gradients and the optimizer's update "
                             "(docs/training.md)"),
                    cl::init(false), cl::cat(tessel::getTrainingCategory()));
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
cl::opt<bool> recompute(
    "recompute",
    cl::desc("Activation checkpointing: recompute each layer's forward in "
             "the backward instead of keeping its activations"),
    cl::init(false), cl::cat(tessel::getTrainingCategory()));

/// --microbatches: with --train, the step's batch in K microbatches
/// (gradient accumulation); with --emit=schedule, the pipeline schedule's.
/// One option, declared by EmitSchedule.cpp.
int64_t trainingMicrobatches() {
  auto &opts = cl::getRegisteredOptions();
  auto it = opts.find("microbatches");
  if (it == opts.end())
    return 1;
  auto *opt = static_cast<cl::opt<int> *>(it->second);
  return opt->getNumOccurrences() ? int64_t(*opt) : 1;
}

cl::opt<std::string> weightsModel(
    "weights", cl::value_desc("model.onnx"),
    cl::desc("For a .mlir input: the ONNX model whose weights it names "
             "(default: the model it was imported from)"),
    cl::cat(tessel::getShardingCategory()));

// The key on an imported module that records where its weights are.
constexpr StringLiteral kModelAttr =
    mlir::tessel::TesselDialect::kModelPathAttrName;

} // namespace

int tessel::compile(StringRef inputPath, StringRef outputPath,
                    StopAfter stop) {
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
    llvm::SourceMgr sm;
    mlir::SourceMgrDiagnosticHandler handler(sm, &context);
    module = mlir::parseSourceFile<mlir::ModuleOp>(inputPath, sm, &context);
    if (!module)
      return 1;
    if (auto from = (*module)->getAttrOfType<mlir::StringAttr>(kModelAttr))
      weightsFrom = from.str();
    if (!weightsModel.empty())
      weightsFrom = weightsModel;
  } else {
    auto imported = importModel(context, inputPath);
    if (!imported)
      return fail(toString(imported.takeError()));
    module = std::move(imported->module);
    weights = std::move(imported->weights);
    SmallString<256> abs(inputPath);
    sys::fs::make_absolute(abs);
    (*module)->setAttr(kModelAttr, mlir::StringAttr::get(&context, abs));
  }

  // Annotate from a plan: the mesh, then the specs its rules give.
  if (!meshSpec.empty() || !planSpec.empty()) {
    if (!(*module).getOps<mlir::tessel::MeshOp>().empty())
      return fail("'" + inputPath +
                  "' already has a mesh; --mesh and --plan apply to "
                  "unannotated models");
    mlir::tessel::Plan plan;
    if (!planSpec.empty()) {
      auto loaded = mlir::tessel::loadPlan(planSpec);
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
    std::vector<std::string> unmatched;
    if (Error err = mlir::tessel::applyPlan(*module, mesh, plan, &unmatched))
      return fail(toString(std::move(err)));
    for (const std::string &u : unmatched)
      WithColor::warning(errs(), "tesselc") << "plan rule " << u << "\n";
  }
  if (failed(mlir::verify(*module)))
    return 1;

  std::optional<mlir::tessel::TrainingOptions> training;
  if (train || stop == StopAfter::Autodiff) {
    mlir::tessel::TrainingOptions t;
    t.loss.kind = lossKind;
    t.loss.output = lossOutput;
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
    t.microbatch.count = trainingMicrobatches();
    if (bucketMb < 0)
      return fail("--bucket-mb must be >= 0 (got " + std::to_string(bucketMb) + ")");
    t.buckets.bucketMb = bucketMb;
    t.recompute = recompute;
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
    mlir::tessel::printCollectiveReport(*module, outs());
    mlir::tessel::printMemoryReport(*module, outs());
  }

  if (stop != StopAfter::Artifact) {
    std::string message;
    auto output = mlir::openOutputFile(outputPath, &message);
    if (!output)
      return fail(message);
    module->print(output->os());
    output->os() << "\n";
    if (weights)
      printWeightsIfAsked(*weights, output->os());
    output->keep();
    return 0;
  }

  if (!weights) {
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
  std::string out = outputPath.str();
  if (out.empty() || out == "-") {
    SmallString<128> path(inputPath);
    sys::path::replace_extension(path, "tsl");
    out = sys::path::filename(path).str();
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
  if (failed(mlir::tessel::exportArtifact(*module, lookup, out)))
    return 1;
  if (training) {
    // The source model of --export-onnx: only an ONNX input is the graph the
    // trained tensors go back into (a .mlir may be any program).
    std::string onnx = inputPath.ends_with(".mlir") ? "" : inputPath.str();
    std::string error =
        tessel::writeTrainingFiles(*module, loss, lookup, onnx, out);
    if (!error.empty())
      return fail(error);
  }
  if (gradsModule) {
    mlir::tessel::ExportOptions eo;
    eo.gradientWeightsAsStates = true;
    SmallString<256> grads(out);
    sys::path::append(grads, "grads");
    if (failed(mlir::tessel::exportArtifact(*gradsModule, lookup, grads, eo)))
      return 1;
  }
  return 0;
}
