//===- OnnxPlan.h - ONNX's sharding annotations as a plan -------*- C++ -*-===//
//
// `--plan=onnx` reads the model's multi-device annotations as its plan;
// `--emit=onnx` writes the plan a compile applied back into the model as
// those annotations (docs/plans.md). An annotation names devices; a plan
// names mesh axes: each annotated tensor's devices are matched against the
// layouts the mesh's axes give (ranks numbered with the first axis major),
// and one that no choice of axes gives is refused.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_DRIVER_ONNXPLAN_H
#define TESSEL_DRIVER_ONNXPLAN_H

#include "tessel/Import/OnnxSharding.h"
#include "tessel/Plan/Plan.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tessel::driver {

using Mesh = std::vector<std::pair<std::string, int64_t>>;

/// The plan `annotations` (of the model `modelName`) give on `mesh` (given:
/// --mesh; else the model's tessel.mesh metadata; else one axis "tp" of the
/// configuration's devices). Weights and graph inputs become rules, node
/// pipeline stages stage rules; annotations of tensors the graph computes
/// are Tessel's propagation's to decide and are counted in `chosen`.
llvm::Expected<mlir::tessel::Plan>
planFromOnnxAnnotations(const mlir::tessel::OnnxShardingAnnotations &annotations,
                        llvm::StringRef modelName, const std::optional<Mesh> &mesh,
                        llvm::raw_ostream &chosen);

/// The annotations of the specs `module`'s weights and arguments carry after
/// the plan phase, on `mesh`, for the nodes of `model` (their inputs that
/// are weights or graph inputs split over an axis), with the stages
/// `stageRules` give each node.
mlir::tessel::OnnxShardingAnnotations
annotationsFromModule(mlir::ModuleOp module, const Mesh &mesh,
                      const std::vector<mlir::tessel::PlanRule> &stageRules,
                      const mlir::tessel::OnnxShardingAnnotations &model);

} // namespace tessel::driver

#endif // TESSEL_DRIVER_ONNXPLAN_H
