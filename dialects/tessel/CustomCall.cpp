//===- CustomCall.cpp - tessel.custom_call: a plugin's op, by name --------===//
//
// Verifier, sharding rule and gradient rule of tessel.custom_call, each the
// one its target registered (include/tessel/Extension/Op.h).
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/ExtensionBridge.h"
#include "dialects/tessel/ShardingRuleBuilder.h"
#include "dialects/tessel/TesselOps.h"

#include "tessel/ExtensionHost/Host.h"

using namespace mlir;
using namespace mlir::tessel;
namespace ext = ::tessel::ext;

namespace {

std::vector<ext::TensorType> extTypes(TypeRange types) {
  std::vector<ext::TensorType> r;
  for (Type t : types)
    r.push_back(toExtType(t));
  return r;
}

} // namespace

LogicalResult CustomCallOp::verify() {
  const ext::CustomOp *def = ext::host::findOp(getTarget().str());
  if (!def)
    return emitOpError() << unknownCustomOp(getTarget());
  std::vector<ext::TensorType> out;
  if (std::string why = def->inferTypes(extTypes(getInputs().getTypes()),
                                        toExtAttrs(getAttrsAttr()), out);
      !why.empty())
    return emitOpError() << "'" << getTarget() << "': " << why;
  if (out.size() != getNumResults())
    return emitOpError() << "'" << getTarget() << "' gives " << out.size()
                         << " results, the op has " << getNumResults();
  for (auto [i, t] : llvm::enumerate(getResultTypes()))
    if (toExtType(t) != out[i])
      return emitOpError() << "'" << getTarget() << "': result " << i
                           << " has type " << t << ", its type rule gives "
                           << ext::toString(out[i]);
  return success();
}

OpShardingRuleAttr mlir::tessel::buildCustomCallRule(Operation *op) {
  auto call = cast<CustomCallOp>(op);
  ShardingRuleBuilder rb(op);
  const ext::CustomOp *def = ext::host::findOp(call.getTarget().str());
  if (def && def->shardingRule) {
    ext::ShardingRule rule =
        def->shardingRule(extTypes(call.getInputs().getTypes()),
                          extTypes(call.getResultTypes()),
                          toExtAttrs(call.getAttrsAttr()));
    for (const ext::RuleFactor &f : rule.factors) {
      SmallVector<TensorDim> dims;
      for (const ext::RuleDim &d : f.dims)
        dims.push_back({d.isResult, d.index, d.dim});
      FactorKind kind = f.kind == ext::RuleFactor::Kind::Reduction
                            ? FactorKind::Reduction
                        : f.kind == ext::RuleFactor::Kind::NeedReplication
                            ? FactorKind::NeedReplication
                            : FactorKind::Pass;
      rb.addFactor(f.size, dims, kind);
    }
    return rb.build();
  }
  // No rule: every dim a factor of its own that stays replicated.
  for (auto [i, v] : llvm::enumerate(call.getInputs()))
    for (auto [d, size] :
         llvm::enumerate(cast<RankedTensorType>(v.getType()).getShape()))
      rb.addFactor(size, {operandDim(i, d)}, FactorKind::NeedReplication);
  for (auto [i, v] : llvm::enumerate(call.getResults()))
    for (auto [d, size] :
         llvm::enumerate(cast<RankedTensorType>(v.getType()).getShape()))
      rb.addFactor(size, {resultDim(i, d)}, FactorKind::NeedReplication);
  return rb.build();
}

namespace mlir::tessel {

LogicalResult buildCustomCallGradient(CustomCallOp op, OpBuilder &b,
                                      ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  const ext::CustomOp *def = ext::host::findOp(op.getTarget().str());
  if (!def)
    return op.emitOpError() << unknownCustomOp(op.getTarget());
  if (!def->gradient)
    return op.emitOpError() << "custom op '" << op.getTarget()
                            << "' has no gradient rule (its plugin '"
                            << ext::host::pluginOfOp(op.getTarget().str())
                            << "' registers none)";
  ExtGraphBuilder gb(b, op.getLoc());
  ext::GradientArgs args;
  for (Value v : op.getInputs())
    args.operands.push_back(gb.wrap(v));
  for (Value v : op.getResults())
    args.results.push_back(gb.wrap(v));
  for (Value v : resultGrads)
    args.resultGrads.push_back(gb.wrap(v));
  args.attrs = toExtAttrs(op.getAttrsAttr());
  std::vector<ext::Value> grads;
  if (std::string why = def->gradient(gb, args, grads); !why.empty())
    return op.emitOpError() << "the gradient rule of '" << op.getTarget()
                            << "' failed: " << why;
  if (grads.size() != op.getInputs().size())
    return op.emitOpError() << "the gradient rule of '" << op.getTarget()
                            << "' gives " << grads.size()
                            << " gradients for " << op.getInputs().size()
                            << " operands";
  for (auto [i, g] : llvm::enumerate(grads)) {
    Value x = gb.unwrap(g);
    Value in = op.getInputs()[i];
    if (g && (!x || x.getType() != in.getType()))
      return op.emitOpError() << "the gradient rule of '" << op.getTarget()
                              << "' gives operand " << i << " a gradient of "
                              << (x ? x.getType() : Type()) << ", not "
                              << in.getType();
    operandGrads.push_back(x);
  }
  return success();
}

} // namespace mlir::tessel
