//===- TrainingInfo.cpp - tesselc --train: the artifact's training.pb -----===//
#include "TrainingInfo.h"

#include "tessel/Export/ExportArtifact.h"
#include "tessel/Import/SourceModel.h"
#include "tessel/Import/WeightTable.h"

#include "dialects/tessel/TesselOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include "artifact.pb.h"

#include <map>

using namespace llvm;
using namespace mlir;
using namespace mlir::tessel;

namespace tessel {

namespace {

func::FuncOp entryOf(ModuleOp module) {
  for (auto fn : module.getOps<func::FuncOp>())
    if (!fn.isExternal() && fn.isPublic())
      return fn;
  return {};
}

artifact::DType dtypeOf(Type t) {
  if (t.isF32())
    return artifact::F32;
  if (t.isSignlessInteger(64))
    return artifact::I64;
  if (t.isSignlessInteger(32))
    return artifact::I32;
  if (t.isSignlessInteger(1))
    return artifact::BOOL;
  return artifact::DTYPE_UNSPECIFIED;
}

} // namespace

LossSummary summarizeLoss(ModuleOp module, StringRef kind, StringRef output) {
  LossSummary s;
  s.kind = kind.str();
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

std::string writeTrainingInfo(ModuleOp module, const LossSummary &loss,
                              const WeightTable &weights, StringRef onnxPath,
                              StringRef artifactDir) {
  artifact::TrainingInfo info;
  info.set_loss(loss.kind);
  if (loss.kind == "cross_entropy" && loss.classes > 0) {
    info.set_labels_input("labels");
    info.set_classes(loss.classes);
  }
  // The tensors training changes: weights a tessel.assign writes that start
  // from the model's data (not optimizer state, which starts from zeros),
  // once per stored piece.
  std::map<std::string, artifact::TrainedTensor> tensors;
  llvm::StringSet<> trained;
  if (func::FuncOp fn = entryOf(module))
    fn.walk([&](AssignOp a) {
      auto w = a.getWeight().getDefiningOp<WeightOp>();
      if (!w || w.getZeros())
        return;
      std::string state = weightStorageName(w);
      if (tensors.count(state))
        return;
      artifact::TrainedTensor t;
      t.set_tensor(w.getName().str());
      t.set_state(state);
      t.set_dtype(dtypeOf(w.getType().getElementType()));
      trained.insert(w.getName());
      tensors[state] = t;
    });
  // Pieces of a fused parameter; the whole tensor's shape, the model's.
  if (func::FuncOp fn = entryOf(module))
    fn.walk([&](WeightOp w) {
      auto it = tensors.find(weightStorageName(w));
      if (it == tensors.end())
        return;
      if (auto src = w->getAttrOfType<DenseI64ArrayAttr>(
              TesselDialect::kSourceSliceAttrName)) {
        it->second.set_dim(src[0]);
        it->second.set_start(src[1]);
        it->second.set_end(src[2]);
      }
    });
  for (auto &[state, t] : tensors) {
    if (const WeightInfo *w = weights.lookup(t.tensor()))
      for (int64_t d : w->shape)
        t.add_shape(d);
    else
      return "no shape for trained tensor '" + t.tensor() + "' in the model";
  }
  for (auto &[state, t] : tensors)
    *info.add_tensors() = t;
  if (!onnxPath.empty() && !trained.empty()) {
    SmallString<256> out(artifactDir);
    sys::path::append(out, "source.onnx");
    if (Error e = writeSourceModel(onnxPath, trained, out))
      WithColor::warning(errs(), "tesselc")
          << "no source model in the artifact, so tessel-run --export-onnx "
             "will not work: "
          << toString(std::move(e)) << "\n";
    else
      info.set_source_model("source.onnx");
  }
  SmallString<256> path(artifactDir);
  sys::path::append(path, "training.pb");
  std::string bytes;
  if (!info.SerializeToString(&bytes))
    return "cannot serialise " + path.str().str();
  std::error_code ec;
  raw_fd_ostream os(path, ec, sys::fs::OF_None);
  if (ec)
    return path.str().str() + ": " + ec.message();
  os << bytes;
  os.close();
  if (os.has_error())
    return path.str().str() + ": " + os.error().message();
  return "";
}

} // namespace tessel
