//===- Plan.h - sharding plans: name patterns -> specs ----------*- C++ -*-===//
//
// A plan is the seed's loop over `named_modules`, as data: rules that map
// weight names, ONNX node names and graph input names to specs. Plans are
// YAML or JSON files (JSON is YAML), or built in (`dp`).
//
//   mesh: {dp: 2, tp: 2}                   # optional; --mesh overrides it
//   rules:
//     - weight: "transformer.h.*.mlp.c_fc.*"
//       split: {dim: -1, axes: [tp]}        # ShardSpec([-1], [tp])
//     - node: "/h.*/attn/c_proj/MatMul"     # the weight input of that node
//       split: {dim: 0, axes: [tp]}
//     - input: "input_ids"
//       split: {dim: 0, axes: [dp]}
//     - node: "/lm_head/MatMul"             # vocab 50257 over tp=2: pad it
//       split: {dim: -1, axes: [tp], pad: auto}
//     - node: "/h.[23]/*"                   # pipeline stage rules (pp axis;
//       stage: 1                            # docs/pipeline.md)
//
// A split of a dim that its axes do not divide is refused unless the split
// says `pad: N` (exactly N padding entries) or `pad: auto` (the fewest that
// make it divide); the pad is recorded in the spec.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_PLAN_PLAN_H
#define TESSEL_PLAN_PLAN_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <utility>
#include <vector>

namespace mlir::tessel {

/// One split of a rule: `dim` over `axes`, with an optional pad.
struct PlanSplit {
  /// A negative dim counts from the last.
  int64_t dim = 0;
  std::vector<std::string> axes;
  /// Padding entries added to the dim; ignored when `autoPad` is set.
  int64_t pad = 0;
  /// `pad: auto`: the fewest entries that make the dim divide.
  bool autoPad = false;
  /// The batch split of the built-in plans (batchOverDpRule): a batch with
  /// fewer rows than shards (a batch-1 export on dp=2) is left whole, each
  /// shard running the whole batch, with a warning; a larger one the axes
  /// do not divide is padded (`autoPad`).
  bool batch = false;
};

struct PlanRule {
  enum class Target { Weight, Node, Input };
  Target target = Target::Weight;
  /// A glob over the weight, node or input name.
  std::string pattern;
  /// For node rules: which operand; -1 means its first weight operand.
  int64_t operand = -1;
  /// The splits. Empty: the tensor is pinned replicated.
  std::vector<PlanSplit> splits;
  /// Where the rule was written, for messages ("plan.yaml:7").
  std::string where;
  /// A pipeline stage rule (`node: PATTERN` + `stage: N`): the stage of the
  /// ops of the nodes it matches (docs/pipeline.md); -1 for sharding rules.
  int64_t stage = -1;
};

struct Plan {
  std::vector<std::pair<std::string, int64_t>> mesh;
  std::vector<PlanRule> rules;
  /// Pipeline stage rules, in file order.
  std::vector<PlanRule> stageRules;
};

/// Parses a plan from YAML or JSON text; `name` names it in messages.
llvm::Expected<Plan> parsePlan(llvm::StringRef text, llvm::StringRef name);

/// Reads `spec`: a built-in plan name (`dp`: every graph input split on dim 0
/// over the "dp" axis) or a plan file.
llvm::Expected<Plan> loadPlan(llvm::StringRef spec);

/// The rule of the built-in plan `dp`: every graph input's dim 0 over "dp";
/// `where` names the plan it belongs to in messages.
PlanRule batchOverDpRule(llvm::StringRef where);

/// A glob (a rule's pattern) that matches exactly `name`.
std::string literalGlob(llvm::StringRef name);
/// The ONNX node name an op's location carries (what `node:` rules match),
/// or "".
StringRef nodeName(Operation *op);
/// `loadPlan`, and the built-in plans that read the model: `megatron`
/// (lib/Plan/MegatronPlan.cpp) finds the column/row pairs of transformer
/// blocks in `module` and writes what it chose to `chosen`.
llvm::Expected<Plan> loadPlan(llvm::StringRef spec, ModuleOp module,
                              llvm::raw_ostream &chosen);

/// The Megatron-LM plan of `module` by graph structure: each matmul whose
/// activation comes only from other weight matmuls through per-feature ops
/// (attention's heads, an MLP's activation) is row-parallel (its weight's
/// contracted dim split over "tp"), those matmuls column-parallel (their
/// output dim and bias split over "tp"); graph inputs split on dim 0 over
/// "dp". Writes one line per pair to `chosen`.
Plan megatronPlan(ModuleOp module, llvm::raw_ostream &chosen);

/// Writes `plan` as a plan file (YAML) that parsePlan reads back to the
/// same mesh, rules and stage rules; patterns are quoted, each rule on its
/// own lines.
void printPlan(const Plan &plan, llvm::raw_ostream &os);

/// Parses "dp=2,tp=2" into mesh axes. An axis "tp=4:MODE" of a registered
/// parallel mode (docs/extending.md) becomes the mode's sub-axes, named
/// "tp.SUB" (e.g. tp=4:tp2d -> tp.row=2, tp.col=2).
llvm::Expected<std::vector<std::pair<std::string, int64_t>>>
parseMeshSpec(llvm::StringRef spec);

/// Adds `tessel.mesh @mesh` to `module` and attaches the specs `plan` gives
/// (first matching rule wins per tensor). Fails with one message naming the
/// rule and the tensor when a rule cannot apply (an axis the mesh lacks, a
/// dim out of range, a node without a weight operand). Rules that match
/// nothing are reported in `unmatched`, and so are rules shadowed by
/// another: they match tensors, but every one is claimed by a rule that
/// comes first (weight rules before node rules, else in file order).
/// Inputs whose batch a built-in batch split leaves whole (fewer rows than
/// shards: PlanSplit::batch) are warned about and, where `wholeBatches` is
/// given, listed in it too.
llvm::Error applyPlan(ModuleOp module,
                      const std::vector<std::pair<std::string, int64_t>> &mesh,
                      const Plan &plan, std::vector<std::string> *unmatched,
                      std::vector<std::string> *wholeBatches = nullptr);

} // namespace mlir::tessel

#endif // TESSEL_PLAN_PLAN_H
