//===- SourceModel.cpp - The ONNX model a trained one is written into -----===//
#include "tessel/Import/SourceModel.h"
#include "ExporterMetadata.h"
#include "ExternalData.h"

#include "onnx/onnx_pb.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Errc.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

using namespace llvm;

namespace mlir::tessel {

namespace {
Error fail(const Twine &msg) {
  return createStringError(errc::invalid_argument, msg);
}
} // namespace

Error writeSourceModel(StringRef modelPath, const StringSet<> &trained,
                       StringRef outPath) {
  auto buf = MemoryBuffer::getFile(modelPath);
  if (!buf)
    return fail(modelPath + ": " + buf.getError().message());
  onnx::ModelProto model;
  if (!model.ParseFromArray((*buf)->getBufferStart(),
                            static_cast<int>((*buf)->getBufferSize())))
    return fail(modelPath + ": not an ONNX model");
  onnx::GraphProto *g = model.mutable_graph();
  StringSet<> found;
  // Parameters the exporter merged into one initializer because their
  // contents were equal (a fresh model's RMSNorm weights, all ones): the
  // importer trained each apart, by the name its readers' FX nodes give
  // (ExporterMetadata::mergedParameter), so each reader reads its own
  // again, which tessel-run appends.
  detail::ExporterMetadata meta;
  if (!meta.read(model) && meta.present()) {
    StringSet<> initializers;
    for (const onnx::TensorProto &t : g->initializer())
      initializers.insert(t.name());
    for (onnx::NodeProto &n : *g->mutable_node())
      for (int i = 0; i < n.input_size(); ++i) {
        if (!initializers.contains(n.input(i)))
          continue;
        std::optional<std::string> own = meta.mergedParameter(n, n.input(i));
        if (own && *own != n.input(i) && trained.contains(*own)) {
          n.set_input(i, *own);
          found.insert(*own);
        }
      }
  }
  // Initializers: trained ones go (tessel-run appends them), the others
  // travel with the artifact inside it: one in external data (the default
  // exporter writes every large one there) is read in, confined to the
  // model's folder as the importer reads it, up to what one protobuf holds.
  constexpr uint64_t kInlineLimit = uint64_t(1) << 30;
  uint64_t inlined = 0;
  SmallString<256> modelDir(modelPath);
  sys::path::remove_filename(modelDir);
  if (modelDir.empty())
    modelDir = ".";
  auto *inits = g->mutable_initializer();
  for (int i = inits->size() - 1; i >= 0; --i) {
    onnx::TensorProto &t = *inits->Mutable(i);
    if (trained.contains(t.name())) {
      found.insert(t.name());
      inits->DeleteSubrange(i, 1);
      continue;
    }
    if (t.data_location() != onnx::TensorProto::EXTERNAL)
      continue;
    detail::ExternalSlice slice;
    std::string refused;
    if (!detail::locateExternalData(modelDir, t, std::nullopt, "", slice,
                                    refused))
      return fail(modelPath + ": " + refused);
    if (slice.length > kInlineLimit - inlined)
      return fail(modelPath + ": the untrained initializers in external data "
                  "need more than " + Twine(kInlineLimit) +
                  " bytes inside the artifact's source model (at '" +
                  t.name() + "', " + Twine(slice.length) + " bytes)");
    inlined += slice.length;
    auto bytes = MemoryBuffer::getFileSlice(slice.file.path, slice.length,
                                            slice.offset);
    if (!bytes)
      return fail(modelPath + ": initializer '" + t.name() + "': " +
                  slice.location + ": " + bytes.getError().message());
    t.set_raw_data((*bytes)->getBufferStart(), (*bytes)->getBufferSize());
    t.clear_external_data();
    t.set_data_location(onnx::TensorProto::DEFAULT);
  }
  // Nodes that made a trained tensor.
  auto *nodes = g->mutable_node();
  for (int i = nodes->size() - 1; i >= 0; --i) {
    const onnx::NodeProto &n = nodes->Get(i);
    int hits = 0, outs = 0;
    for (const std::string &o : n.output())
      if (!o.empty()) {
        ++outs;
        hits += trained.contains(o);
      }
    if (hits == 0)
      continue;
    if (hits != outs)
      return fail(modelPath + ": node '" + n.name() + "' (" + n.op_type() +
                  ") makes a trained tensor and other outputs");
    for (const std::string &o : n.output())
      found.insert(o);
    nodes->DeleteSubrange(i, 1);
  }
  for (const auto &t : trained)
    if (!found.contains(t.getKey()))
      return fail(modelPath + ": trained tensor '" + t.getKey() +
                  "' is neither an initializer nor a node's output");
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    return fail(outPath + ": cannot serialise the model");
  std::error_code ec;
  raw_fd_ostream os(outPath, ec, sys::fs::OF_None);
  if (ec)
    return fail(outPath + ": " + ec.message());
  os << bytes;
  os.close();
  if (os.has_error())
    return fail(outPath + ": " + os.error().message());
  return Error::success();
}

} // namespace mlir::tessel
