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

#include <map>
#include <string>
#include <vector>

using namespace llvm;

namespace mlir::tessel {

namespace {
Error fail(const Twine &msg) {
  return createStringError(errc::invalid_argument, msg);
}
} // namespace

Error writeSourceModel(StringRef modelPath, const StringSet<> &trained,
                       const TiedCopies &tiedCopies, StringRef outPath) {
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
    // Biases the exporter's optimizer dropped because they were zero: the
    // importer restored each as a parameter (ExporterMetadata::droppedBias),
    // which its Gemm or Conv reads again.
    for (onnx::NodeProto &n : *g->mutable_node()) {
      if ((n.op_type() != "Gemm" && n.op_type() != "Conv") ||
          n.input_size() < 2 || (n.input_size() > 2 && !n.input(2).empty()))
        continue;
      std::optional<std::string> bias = meta.droppedBias(n);
      if (!bias || !trained.contains(*bias))
        continue;
      if (n.input_size() > 2)
        n.set_input(2, *bias);
      else
        n.add_input(*bias);
      found.insert(*bias);
    }
  }
  // Copies of a trained tensor that the exporter wrote apart (a tied LM
  // head's transposed copy): computed from it, so that none keeps the
  // untrained values.
  std::vector<onnx::NodeProto> ties;
  StringSet<> copies;
  std::map<std::string, std::vector<int64_t>> initializerDims;
  for (const onnx::TensorProto &t : g->initializer())
    initializerDims[t.name()].assign(t.dims().begin(), t.dims().end());
  for (const auto &[copy, from] : tiedCopies) {
    if (!trained.contains(from.first))
      continue;
    onnx::NodeProto n;
    n.set_name("tessel_tie/" + copy.str());
    n.add_input(from.first);
    n.add_output(copy.str());
    if (from.second == "expand") {
      // A row read at every position (the importer's NAME.row): expanded
      // to the copy's shape, an initializer of its own.
      auto dims = initializerDims.find(copy.str());
      if (dims == initializerDims.end())
        return fail(modelPath + ": '" + copy + "' is no initializer");
      onnx::TensorProto *shape = g->add_initializer();
      shape->set_name(copy.str() + ".shape");
      shape->set_data_type(onnx::TensorProto::INT64);
      shape->add_dims(int64_t(dims->second.size()));
      for (int64_t d : dims->second)
        shape->add_int64_data(d);
      n.set_op_type("Expand");
      n.add_input(shape->name());
      found.insert(from.first);
    } else if (from.second == "transposed") {
      n.set_op_type("Transpose");
      onnx::AttributeProto *perm = n.add_attribute();
      perm->set_name("perm");
      perm->set_type(onnx::AttributeProto::INTS);
      perm->add_ints(1);
      perm->add_ints(0);
    } else {
      n.set_op_type("Identity");
    }
    ties.push_back(std::move(n));
    copies.insert(copy);
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
    if (trained.contains(t.name()) || copies.contains(t.name())) {
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
  // The ties' nodes first: they read only initializers.
  if (!ties.empty()) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> ordered;
    for (onnx::NodeProto &n : ties)
      *ordered.Add() = std::move(n);
    for (onnx::NodeProto &n : *nodes)
      *ordered.Add() = std::move(n);
    nodes->Swap(&ordered);
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
