//===- TrainingOps.cpp - verifiers and sharding rules of the training ops -===//
//
// The ops of TrainingOps.td: the fused backward kernels (gather_grad,
// gelu_grad, log_softmax_grad, relu_grad, batch_norm_grad_sums,
// batch_norm_grad_input), the forward's batch_norm_variance, and the fused
// optimizer updates (adam_update, sgd_update). Each check carries the constraint label of its
// ODS description.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/ShardingRuleBuilder.h"
#include "dialects/tessel/TesselOps.h"
#include "dialects/tessel/Verifiers.h"

using namespace mlir;
using namespace mlir::tessel;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

LogicalResult verifyAxisIn(Operation *op, int64_t axis, int64_t rank) {
  if (axis < 0 || axis >= rank)
    return op->emitOpError() << "axis " << axis << " is out of range [0, "
                             << rank << ")";
  return success();
}

/// Every one of `values` has `want`'s type.
LogicalResult verifySameTypes(Operation *op, Type want, ValueRange values,
                              ArrayRef<StringRef> names) {
  for (auto [v, name] : llvm::zip(values, names))
    if (v.getType() != want)
      return op->emitOpError() << name << " has type " << v.getType()
                               << ", expected " << want;
  return success();
}

/// The optimizer updates' C1 and C2: tensors of one f32 type, f32 scalars.
LogicalResult verifyUpdate(Operation *op, unsigned numTensors,
                           ArrayRef<StringRef> names) {
  Type want = op->getOperand(0).getType();
  if (!typeOf(op->getOperand(0)).getElementType().isF32())
    return op->emitOpError() << "updates f32 tensors, not " << want;
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    Value v = op->getOperand(i);
    if (i < numTensors) {
      if (v.getType() != want)
        return op->emitOpError() << names[i] << " has type " << v.getType()
                                 << ", expected " << want;
      continue;
    }
    RankedTensorType t = typeOf(v);
    if (t.getRank() != 0 || !t.getElementType().isF32())
      return op->emitOpError() << names[i] << " must be an f32 scalar "
                               << "(tensor<f32>), got " << t;
  }
  for (Type t : op->getResultTypes())
    if (t != want)
      return op->emitOpError() << "results must have type " << want
                               << ", got " << t;
  return success();
}

} // namespace

LogicalResult GatherGradOp::verify() {
  RankedTensorType out = getType(), g = getGrad().getType();
  ArrayRef<int64_t> idx = getIndices().getType().getShape();
  int64_t axis = getAxis();
  if (failed(verifyAxisIn(*this, axis, out.getRank()))) // C1
    return failure();
  // C2
  SmallVector<int64_t> want(out.getShape().take_front(axis));
  want.append(idx.begin(), idx.end());
  want.append(out.getShape().begin() + axis + 1, out.getShape().end());
  if (g.getShape() != ArrayRef<int64_t>(want))
    return emitOpError() << "grad has shape " << formatShape(g.getShape())
                         << ", the gather of the result's shape by the "
                            "indices has "
                         << formatShape(want);
  if (g.getElementType() != out.getElementType())
    return emitOpError() << "grad and result element types differ";
  return success();
}

LogicalResult GeluGradOp::verify() {
  return verifySameTypes(*this, getType(), {getInput(), getGrad()}, // C1
                         {"input", "grad"});
}

LogicalResult ReluGradOp::verify() {
  return verifySameTypes(*this, getType(), {getOutput(), getGrad()}, // C1
                         {"output", "grad"});
}

/// C1 and C2 of the BatchNorm backward ops: `grad` [N, C, ...], `input` of
/// its type, each named per-channel value [C] of its element type.
static LogicalResult
verifyBatchNormGrad(Operation *op, Value grad, Value input,
                    ArrayRef<std::pair<Value, StringRef>> perChannel) {
  RankedTensorType g = typeOf(grad);
  // C1
  if (g.getRank() < 2)
    return op->emitOpError() << "grad must have rank at least 2, got "
                             << g.getRank();
  if (input.getType() != g)
    return op->emitOpError() << "input has type " << input.getType()
                             << ", expected " << g;
  // C2
  auto want = RankedTensorType::get({g.getDimSize(1)}, g.getElementType());
  for (auto [v, name] : perChannel)
    if (v.getType() != want)
      return op->emitOpError() << name << " has type " << v.getType()
                               << ", expected " << want << " (one per channel)";
  return success();
}

LogicalResult BatchNormGradSumsOp::verify() {
  return verifyBatchNormGrad(*this, getGrad(), getInput(),
                             {{getMean(), "mean"},
                              {getSumGrad(), "sum_grad"},
                              {getSumGradCentred(), "sum_grad_centred"}});
}

LogicalResult BatchNormVarianceOp::verify() {
  RankedTensorType x = getInput().getType();
  // C1
  if (x.getRank() < 2)
    return emitOpError() << "input must have rank at least 2, got "
                         << x.getRank();
  // C2
  auto want = RankedTensorType::get({x.getDimSize(1)}, x.getElementType());
  for (auto [v, name] : {std::pair<Value, StringRef>{getMean(), "mean"},
                         {getResult(), "result"}})
    if (v.getType() != want)
      return emitOpError() << name << " has type " << v.getType()
                           << ", expected " << want << " (one per channel)";
  return success();
}

LogicalResult BatchNormGradInputOp::verify() {
  if (failed(verifyBatchNormGrad(*this, getGrad(), getInput(),
                                 {{getMean(), "mean"},
                                  {getGradMean(), "grad_mean"},
                                  {getProj(), "proj"},
                                  {getCoef(), "coef"}})))
    return failure();
  if (getType() != getGrad().getType()) // C1
    return emitOpError() << "result has type " << getType() << ", expected "
                         << getGrad().getType();
  return success();
}

LogicalResult RoundFloatOp::verify() {
  if (getExponentBits() < 2 || getExponentBits() > 8) // C2
    return emitOpError() << "exponent_bits must be in [2, 8] (got "
                         << getExponentBits() << ")";
  if (getMantissaBits() < 0 || getMantissaBits() > 23) // C2
    return emitOpError() << "mantissa_bits must be in [0, 23] (got "
                         << getMantissaBits() << ")";
  return success();
}

LogicalResult LogSoftmaxGradOp::verify() {
  if (failed(verifyAxisIn(*this, getAxis(), getType().getRank()))) // C1
    return failure();
  return verifySameTypes(*this, getType(), {getOutput(), getGrad()}, // C2
                         {"output", "grad"});
}

LogicalResult AdamUpdateOp::verify() {
  return verifyUpdate(*this, 4,
                      {"param", "grad", "exp_avg", "exp_avg_sq", "step_size",
                       "sqrt_bc2", "decay"});
}

LogicalResult SgdUpdateOp::verify() {
  return verifyUpdate(*this, 3, {"param", "grad", "momentum_buffer", "lr"});
}

// The gather's rule read backwards: grad's dims before and after the
// indices' map onto the result's; the indices' dims disappear (a sum: sharded,
// they make the result partial); the gathered dim stays whole.
OpShardingRuleAttr mlir::tessel::buildGatherGradRule(GatherGradOp op) {
  ShardingRuleBuilder b(op);
  ArrayRef<int64_t> data = op.getType().getShape(),
                    idx = op.getIndices().getType().getShape();
  int64_t axis = op.getAxis(), ir = idx.size();
  for (int64_t d = 0; d < axis; ++d)
    b.addFactor(data[d], {operandDim(0, d), resultDim(0, d)});
  for (int64_t d = 0; d < ir; ++d)
    b.addFactor(idx[d], {operandDim(0, axis + d), operandDim(1, d)},
                FactorKind::Reduction);
  for (int64_t d = axis + 1; d < static_cast<int64_t>(data.size()); ++d)
    b.addFactor(data[d], {operandDim(0, d - 1 + ir), resultDim(0, d)});
  b.addFactor(data[axis], {resultDim(0, axis)}, FactorKind::NeedReplication);
  return b.build();
}

// Both operands and the result correspond dim by dim; the softmax axis
// stays whole.
OpShardingRuleAttr mlir::tessel::buildSoftmaxGradRule(Operation *op) {
  ShardingRuleBuilder b(op);
  int64_t axis = cast<IntegerAttr>(op->getAttr("axis")).getInt();
  for (auto [d, size] : llvm::enumerate(typeOf(op->getResult(0)).getShape()))
    b.addFactor(size, {operandDim(0, d), operandDim(1, d), resultDim(0, d)},
                static_cast<int64_t>(d) == axis ? FactorKind::NeedReplication
                                                : FactorKind::Pass);
  return b.build();
}

// batch_norm_grad_sums and batch_norm_variance: the channels (dim 1) pass,
// shared with the per-channel operands and results; every other dim of the
// [N, C, ...] operands is reduced: sharded (the batch over dp), the results
// are partial (sums, or means for the variance).
OpShardingRuleAttr mlir::tessel::buildChannelReduceRule(Operation *op) {
  ShardingRuleBuilder b(op);
  ArrayRef<int64_t> shape = typeOf(op->getOperand(0)).getShape();
  for (auto [d, size] : llvm::enumerate(shape)) {
    SmallVector<TensorDim> dims;
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      int64_t r = typeOf(v).getRank();
      if (r == static_cast<int64_t>(shape.size()))
        dims.push_back(operandDim(i, d));
      else if (r == 1 && d == 1)
        dims.push_back(operandDim(i, 0));
    }
    if (d != 1) {
      b.addFactor(size, dims, FactorKind::Reduction);
      continue;
    }
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      dims.push_back(resultDim(i, 0));
    b.addFactor(size, dims);
  }
  return b.build();
}

// Operands of the result's rank correspond to it dim by dim; [C] operands
// to its dim 1.
OpShardingRuleAttr mlir::tessel::buildChannelwiseRule(Operation *op) {
  ShardingRuleBuilder b(op);
  auto rank = typeOf(op->getResult(0)).getRank();
  for (auto [d, size] : llvm::enumerate(typeOf(op->getResult(0)).getShape())) {
    SmallVector<TensorDim> dims{resultDim(0, d)};
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      int64_t r = typeOf(v).getRank();
      if (r == rank)
        dims.push_back(operandDim(i, d));
      else if (r == 1 && d == 1)
        dims.push_back(operandDim(i, 0));
    }
    b.addFactor(size, dims);
  }
  return b.build();
}
