//===- TrainingInfo.cpp - The artifact's training.pb ----------------------===//
#include "tessel/Export/TrainingInfo.h"

#include "dialects/tessel/TesselOps.h"
#include "dialects/tessel/PipelineAttrs.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "artifact.pb.h"
#include "tessel/runtime/TrainingInfo.h"

#include <map>

namespace mlir::tessel {

namespace {

func::FuncOp entryOf(ModuleOp module) {
  for (auto fn : module.getOps<func::FuncOp>())
    if (!fn.isExternal() && fn.isPublic())
      return fn;
  return {};
}

::tessel::artifact::DType dtypeOf(Type t) {
  namespace a = ::tessel::artifact;
  if (t.isF32())
    return a::F32;
  if (t.isSignlessInteger(64))
    return a::I64;
  if (t.isSignlessInteger(32))
    return a::I32;
  if (t.isSignlessInteger(1))
    return a::BOOL;
  if (t.isBF16())
    return a::BF16;
  if (t.isF16())
    return a::F16;
  return a::DTYPE_UNSPECIFIED;
}

/// Every weight a tessel.assign writes that starts from the model's data.
template <typename F> void forEachTrained(ModuleOp module, F f) {
  // A pipelined step: every pp rank's function (PipelineAttrs.h).
  for (auto fn : module.getOps<func::FuncOp>())
    if (fn == entryOf(module) || fn->hasAttr(kPpRankAttr))
      fn.walk([&](AssignOp a) {
      if (auto w = a.getWeight().getDefiningOp<WeightOp>())
        if (!w.getZeros())
          f(w);
    });
}

} // namespace

TrainingInfoOptions summarizeLoss(ModuleOp module, StringRef kind,
                                  StringRef output) {
  TrainingInfoOptions s;
  s.loss = kind.str();
  func::FuncOp fn = entryOf(module);
  if (!fn || kind != "cross_entropy")
    return s;
  auto names =
      fn->getAttrOfType<ArrayAttr>(TesselDialect::kOutputNamesAttrName);
  ArrayRef<Type> results = fn.getFunctionType().getResults();
  for (unsigned i = 0; i < results.size(); ++i) {
    std::string name = names && i < names.size()
                           ? cast<StringAttr>(names[i]).str()
                           : "output" + std::to_string(i);
    if (output.empty() ? results.size() != 1 : name != output)
      continue;
    auto t = dyn_cast<RankedTensorType>(results[i]);
    if (t && t.getRank() >= 1 && t.hasStaticShape())
      s.classes = t.getShape().back();
  }
  return s;
}

std::vector<std::string> trainedTensors(ModuleOp module) {
  std::vector<std::string> names;
  forEachTrained(module, [&](WeightOp w) {
    if (llvm::find(names, w.getName()) == names.end())
      names.push_back(w.getName().str());
  });
  return names;
}

std::string writeTrainingInfo(ModuleOp module, const WeightLookup &weights,
                              const TrainingInfoOptions &options,
                              StringRef artifactDir) {
  ::tessel::artifact::TrainingInfo info;
  info.set_loss(options.loss);
  if (options.loss == "cross_entropy" && options.classes > 0) {
    info.set_labels_input("labels");
    info.set_classes(options.classes);
  }
  info.set_source_model(options.sourceModel);
  if (!options.optimizer.empty()) {
    info.set_optimizer(options.optimizer);
    info.set_lr(options.lr);
    info.set_lr_schedule(options.lrSchedule);
    info.set_warmup_steps(options.warmupSteps);
    info.set_total_steps(options.totalSteps);
  }
  // Pipelined: the first rank (dp, tp coordinates 0) of the pp rank whose
  // function returns the loss.
  for (auto fn : module.getOps<func::FuncOp>()) {
    auto pp = fn->getAttrOfType<IntegerAttr>(kPpRankAttr);
    if (!pp || fn.getNumResults() == 0)
      continue;
    int64_t stride = 1;
    bool after = false;
    for (MeshOp mesh : module.getOps<MeshOp>())
      for (auto [name, size] :
           llvm::zip(mesh.getAxisNames(), mesh.getAxisSizes())) {
        if (after)
          stride *= size;
        after |= cast<StringAttr>(name).getValue() == kPipelineAxis;
      }
    info.set_loss_rank(int32_t(pp.getInt() * stride));
  }
  // Once per stored piece (the exporter's state name).
  std::map<std::string, ::tessel::artifact::TrainedTensor> tensors;
  auto names =
      module->getAttrOfType<DictionaryAttr>(TesselDialect::kParameterNamesAttrName);
  std::string error;
  forEachTrained(module, [&](WeightOp w) {
    std::string state = weightStorageName(w);
    if (tensors.count(state) || !error.empty())
      return;
    ::tessel::artifact::TrainedTensor &t = tensors[state];
    t.set_tensor(w.getName().str());
    t.set_state(state);
    t.set_dtype(dtypeOf(w.getType().getElementType()));
    if (auto fields = names ? names.getAs<DictionaryAttr>(w.getName())
                            : DictionaryAttr()) {
      if (auto p = fields.getAs<StringAttr>("parameter"))
        t.set_parameter(p.str());
      if (auto l = fields.getAs<StringAttr>("layout"))
        t.set_layout(l.str());
      if (auto a = fields.getAs<ArrayAttr>("aliases"))
        for (Attribute alias : a)
          t.add_aliases(cast<StringAttr>(alias).str());
    }
    if (auto src = w->getAttrOfType<DenseI64ArrayAttr>(
            TesselDialect::kSourceSliceAttrName)) {
      t.set_dim(src[0]);
      t.set_start(src[1]);
      t.set_end(src[2]);
    }
    // The whole tensor's shape: the model's.
    std::string why;
    FailureOr<WeightData> data = weights(w.getName(), why);
    if (failed(data)) {
      error = "trained tensor '" + w.getName().str() + "': " + why;
      return;
    }
    for (int64_t d : data->shape)
      t.add_shape(d);
    // An f32 master of a half parameter: exported in the model's type.
    if (data->elementType && data->elementType != w.getType().getElementType())
      t.set_model_dtype(dtypeOf(data->elementType));
  });
  if (!error.empty())
    return error;
  for (auto &[state, t] : tensors)
    *info.add_tensors() = t;
  // The artifact library is training.pb's one writer (and reader).
  ::tessel::runtime::Status s =
      ::tessel::runtime::writeTrainingInfo(artifactDir.str(), info);
  return s ? "" : s.message();
}

} // namespace mlir::tessel
