//===- FusedElementwiseOp.cpp - tessel.fused_elementwise's verifier -------===//
//
// The op -tessel-fuse-elementwise (lib/Transforms/FuseElementwise.cpp)
// writes; its constraints (C1-C3) as TesselOps.td states them.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/FusedElementwise.h"
#include "dialects/tessel/TesselOps.h"
#include "dialects/tessel/Verifiers.h"

using namespace mlir;
using namespace mlir::tessel;

LogicalResult FusedElementwiseOp::verify() {
  auto f32 = Float32Type::get(getContext());
  auto result = getResult().getType();
  if (result.getElementType() != f32)
    return emitOpError() << "result must be f32, got " << result;
  for (auto [i, v] : llvm::enumerate(getInputs())) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getElementType() != f32 ||
        !fitsFusedInput(t.getShape(), result.getShape()))
      return emitOpError() << "input " << i << " has type " << t
                           << ": an input is f32 of the result's shape, one "
                              "element or the result's trailing dims";
  }
  ArrayAttr ops = getOps();
  ArrayRef<int64_t> args = getArgs();
  if (ops.empty() || args.size() != 3 * ops.size())
    return emitOpError() << "needs at least one instruction and three args "
                            "per instruction, got "
                         << ops.size() << " ops and " << args.size()
                         << " args";
  const int64_t inputs = getInputs().size();
  for (auto [i, a] : llvm::enumerate(ops)) {
    StringRef name = cast<StringAttr>(a).getValue();
    const int arity = fusableArity(name);
    if (!arity)
      return emitOpError() << "instruction " << i << ": '" << name
                           << "' is no fusable elementwise op";
    const int64_t defined = inputs + static_cast<int64_t>(i);
    for (int k = 0; k < 2; ++k) {
      const int64_t v = args[3 * i + k];
      const bool used = k < arity;
      if (used ? (v < 0 || v >= defined) : v != -1)
        return emitOpError() << "instruction " << i << " ('" << name
                             << "') reads value " << v << ", which is "
                             << (used ? "not defined before it" : "not -1");
    }
    if (args[3 * i + 2] != 0 && (name != "gelu" || args[3 * i + 2] != 1))
      return emitOpError() << "instruction " << i << " ('" << name
                           << "') has flag " << args[3 * i + 2];
  }
  return success();
}
