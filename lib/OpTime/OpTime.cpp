//===- OpTime.cpp - an op's seconds on one device -------------------------===//

#include "tessel/OpTime/OpTime.h"
#include "tessel/Lifetimes/BufferLifetimes.h"

#include "dialects/tessel/OpCost.h"
#include "dialects/tessel/TesselOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::tessel;
namespace cost = ::tessel::cost;

cost::Precision mlir::tessel::getPrecision(Operation *op) {
  // --precision bf16: the GEMMs round their f32 operands to bf16.
  if (op->hasAttr("bf16_operands"))
    return cost::Precision::BF16;
  for (Type t : op->getOperandTypes())
    if (auto rt = dyn_cast<RankedTensorType>(t);
        rt && (rt.getElementType().isBF16() || rt.getElementType().isF16()))
      return cost::Precision::BF16;
  return cost::Precision::F32;
}

double mlir::tessel::getValueBytes(ValueRange values) {
  double b = 0;
  for (Value v : values)
    if (isa<RankedTensorType>(v.getType()))
      b += double(std::max<int64_t>(tensorBytes(v.getType()), 0));
  return b;
}

bool mlir::tessel::isFreeAtRunTime(Operation *op) {
  // A reshape is a view of its operand's buffer, and an assign's value is
  // computed into the state buffer: the runtime runs nothing for either.
  if (isa<WeightOp, ConstantOp, ReshapeOp, AssignOp, func::ReturnOp>(op))
    return true;
  return llvm::none_of(op->getResultTypes(),
                       [](Type t) { return isa<RankedTensorType>(t); });
}

double mlir::tessel::getComputeTime(Operation *op,
                                    const cost::DeviceSpec &device) {
  auto costOp = dyn_cast<CostOpInterface>(op);
  CostClass cls = costOp ? costOp.getCostClass() : CostClass::PerElement;
  // A kernel the device measured: its elements over its rate.
  if (cls == CostClass::PerElement && !device.opRates.empty())
    if (auto it = device.opRates.find(
            op->getName().stripDialect().str());
        it != device.opRates.end()) {
      double elements = 0;
      for (ValueRange values : {ValueRange(op->getOperands()),
                                ValueRange(op->getResults())})
        for (Value v : values)
          if (auto t = dyn_cast<RankedTensorType>(v.getType());
              t && t.hasStaticShape())
            elements = std::max(elements, double(t.getNumElements()));
      return elements / it->second + device.opOverhead;
    }
  cost::WorkClass work = cost::WorkClass::Elementwise;
  switch (cls) {
  case CostClass::Contraction:
  case CostClass::Attention:
  case CostClass::AttentionBackward:
    work = cost::WorkClass::Matmul;
    break;
  case CostClass::Convolution:
  case CostClass::ConvolutionBackwardData:
  case CostClass::ConvolutionBackwardWeight:
    work = cost::WorkClass::Convolution;
    break;
  case CostClass::PerElement:
    break;
  }
  // Data movement (slice, concat, transpose, ...) reads what it writes;
  // other ops read their operands and write their results.
  double bytes = op->hasTrait<OpTrait::tessel::DataMovement>()
                     ? 2.0 * getValueBytes(op->getResults())
                     : getValueBytes(op->getOperands()) +
                           getValueBytes(op->getResults());
  // A matmul's operands stream from cache: its time is its FLOPs'.
  if (work != cost::WorkClass::Elementwise)
    bytes = 0;
  // A GEMM's rate follows its smallest dimension (the saturation curve):
  // its contraction, or its result's rows or columns.
  double dim = double(getContractionK(op));
  if (auto result = dyn_cast<RankedTensorType>(op->getResult(0).getType());
      dim > 0 && result && result.hasStaticShape())
    for (int64_t d : result.getShape().take_back(2))
      dim = std::min(dim, double(d));
  return device.getOpTime(work, getPrecision(op), estimateFlops(op), bytes,
                          dim);
}

bool mlir::tessel::isViewAtRunTime(Operation *op) {
  auto slice = dyn_cast<SliceOp>(op);
  if (!slice)
    return false;
  auto in = dyn_cast<RankedTensorType>(slice.getInput().getType());
  if (!in || in.getRank() != 1 || !in.hasStaticShape() ||
      !in.getElementType().isIntOrFloat())
    return false;
  const int64_t count = slice.getLimits()[0] - slice.getStarts()[0];
  if (slice.getStrides()[0] != 1 && count > 1)
    return false;
  const int64_t bytes = in.getElementType().getIntOrFloatBitWidth() / 8;
  return bytes > 0 && (slice.getStarts()[0] * bytes) % 64 == 0;
}

double mlir::tessel::getOpTime(Operation *op, const cost::DeviceSpec &device) {
  if (isFreeAtRunTime(op))
    return 0.0;
  if (isViewAtRunTime(op))
    return device.opOverhead;
  if (!op->getNumRegions())
    return getComputeTime(op, device);
  // Nested regions (a fused or recomputed body) cost what they hold.
  double t = 0;
  op->walk([&](Operation *inner) {
    if (inner != op && !isFreeAtRunTime(inner))
      t += getComputeTime(inner, device);
  });
  return t;
}
