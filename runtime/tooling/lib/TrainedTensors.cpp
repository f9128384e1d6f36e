//===- TrainedTensors.cpp - The model's trained tensors, whole ------------===//
#include "tessel/tooling/TrainedTensors.h"
#include "tessel/runtime/HalfFloat.h"

#include <cstring>

using namespace tessel::runtime;

namespace tessel::tooling {

TrainedPieces trainedPieces(const artifact::TrainingInfo &info) {
  TrainedPieces byTensor;
  for (const artifact::TrainedTensor &t : info.tensors())
    byTensor[t.tensor()].push_back(&t);
  return byTensor;
}

DType trainedDType(const artifact::TrainedTensor &t, DType state) {
  const int model = t.model_dtype();
  if (state == DType::F32 && (model == artifact::BF16 || model == artifact::F16))
    return static_cast<DType>(model);
  return state;
}

Status assembleTrained(const std::string &what, const std::string &name,
                       const std::vector<const artifact::TrainedTensor *> &pieces,
                       const SavedStates &saved, Tensor &whole) {
  const artifact::TrainedTensor &first = *pieces[0];
  Shape shape(first.shape().begin(), first.shape().end());
  std::vector<Tensor> values(pieces.size());
  std::vector<StateBlock> blocks;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const artifact::TrainedTensor &p = *pieces[i];
    TSL_RETURN_IF_ERROR(saved.assemble(p.state(), values[i]));
    StateBlock b;
    b.data = values[i].data();
    b.shape = values[i].shape();
    b.offset.assign(shape.size(), 0);
    b.within(shape);
    b.where = p.state();
    bool fits = b.shape.size() == shape.size();
    if (fits && p.end() > 0) {
      if (p.dim() < 0 || p.dim() >= static_cast<int64_t>(shape.size()) ||
          p.end() - p.start() != b.shape[p.dim()]) {
        fits = false;
      } else {
        b.offset[p.dim()] = b.lo[p.dim()] = p.start();
        b.hi[p.dim()] = p.end();
      }
    }
    if (!fits || values[i].dtype() != values[0].dtype())
      return Status::error(what + ": state '" + p.state() + "' (" +
                           typeToString(values[i].dtype(), b.shape) +
                           ") is no piece of tensor '" + name + "' " +
                           shapeToString(shape));
    blocks.push_back(std::move(b));
  }
  whole = Tensor(values[0].dtype(), shape);
  std::memset(whole.data(), 0, whole.byteSize());
  StateBlock all;
  all.shape = shape;
  all.offset.assign(shape.size(), 0);
  all.within(shape);
  TSL_RETURN_IF_ERROR(
      fillBlock(name, dtypeSize(whole.dtype()), all, whole.data(), blocks));
  // An f32 master of a half parameter goes out in the model's type, rounded
  // to nearest even.
  const DType half = trainedDType(first, whole.dtype());
  if (half != whole.dtype()) {
    Tensor rounded(half, shape);
    roundToHalves(half, whole.data<float>(), rounded.data<uint16_t>(),
                  static_cast<size_t>(whole.numElements()));
    whole = std::move(rounded);
  }
  return Status::ok();
}

} // namespace tessel::tooling
