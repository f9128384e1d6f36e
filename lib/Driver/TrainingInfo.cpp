//===- TrainingInfo.cpp - tesselc --train: the artifact's training files -===//
#include "TrainingInfo.h"

#include "tessel/Export/TrainingInfo.h"
#include "tessel/Import/SourceModel.h"
#include "dialects/tessel/TesselDialect.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"


using namespace llvm;
using namespace mlir;
using namespace mlir::tessel;

namespace tessel {

std::string writeTrainingFiles(ModuleOp module,
                               const TrainingInfoOptions &loss,
                               const WeightLookup &weights,
                               StringRef onnxPath, StringRef artifactDir) {
  TrainingInfoOptions options = loss;
  std::vector<std::string> names = trainedTensors(module);
  if (!onnxPath.empty() && !names.empty()) {
    llvm::StringSet<> trained;
    for (const std::string &n : names)
      trained.insert(n);
    SmallString<256> out(artifactDir);
    sys::path::append(out, "source.onnx");
    TiedCopies copies;
    if (auto attr = module->getAttrOfType<DictionaryAttr>(
            TesselDialect::kTiedCopiesAttrName))
      for (NamedAttribute e : attr) {
        auto pair = cast<ArrayAttr>(e.getValue());
        copies[e.getName().getValue()] = {
            cast<StringAttr>(pair[0]).str(), cast<StringAttr>(pair[1]).str()};
      }
    if (Error e = writeSourceModel(onnxPath, trained, copies, out))
      WithColor::warning(errs(), "tesselc")
          << "no source model in the artifact, so tessel-run --export-onnx "
             "will not work: "
          << toString(std::move(e)) << "\n";
    else
      options.sourceModel = "source.onnx";
  }
  return writeTrainingInfo(module, weights, options, artifactDir);
}

} // namespace tessel
