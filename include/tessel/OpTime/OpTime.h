//===- OpTime.h - an op's seconds on one device -----------------*- C++ -*-===//
//
// The one place where an op of tessel IR meets the cost model's device
// table (docs/auto-plan.md): the op's work from the op table (OpCost.h:
// FLOPs, cost class, contraction) and its bytes, timed by DeviceSpec's
// roofline with its per-op overhead and GEMM saturation curve.
// `tesselc --predict` plays partitioned programs with it; `--stages auto`
// balances the pipeline's stages with it.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_OPTIME_OPTIME_H
#define TESSEL_OPTIME_OPTIME_H

#include "tessel/Cost/Cluster.h"

#include "mlir/IR/Operation.h"

namespace mlir::tessel {

/// The precision `op` computes in: bf16 when it rounds its operands to bf16
/// (--precision bf16) or has a 16-bit float operand, else f32.
::tessel::cost::Precision getPrecision(Operation *op);
/// The bytes of the ranked tensors among `values`.
double getValueBytes(ValueRange values);
/// Whether the runtime runs nothing for `op`: a weight, a constant (both
/// bound once), a view, an op without tensor results.
bool isFreeAtRunTime(Operation *op);
/// Whether the runtime's buffer planner places `op`'s result inside its
/// operand's bytes, so that the op copies nothing: a slice of a 1-D tensor
/// by step 1 at a 64-byte aligned offset (a gradient sliced out of its
/// all-reduced bucket; runtime/artifact's ArtifactBuilder, which also
/// checks that nothing writes the operand afterwards).
bool isViewAtRunTime(Operation *op);
/// The seconds `op` (without regions) takes on `device`: a kernel the
/// device has a measured rate for (DeviceSpec::opRates) by its elements,
/// others on the roofline of their FLOPs and bytes.
double getComputeTime(Operation *op, const ::tessel::cost::DeviceSpec &device);
/// The seconds `op` takes on `device`: 0 when it is free, the op overhead
/// alone for a view, the sum of its body's ops when it holds regions.
double getOpTime(Operation *op, const ::tessel::cost::DeviceSpec &device);

} // namespace mlir::tessel

#endif // TESSEL_OPTIME_OPTIME_H
