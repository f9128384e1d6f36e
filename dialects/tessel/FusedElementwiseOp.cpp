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
  auto result = getResult().getType();
  if (fusedCastCode(result.getElementType()) < 0)
    return emitOpError() << "result must be f32, bf16 or f16, got " << result;
  // Each value's element type: inputs', then each instruction's.
  SmallVector<Type> types;
  for (auto [i, v] : llvm::enumerate(getInputs())) {
    auto t = cast<RankedTensorType>(v.getType());
    if (fusedCastCode(t.getElementType()) < 0 ||
        !fitsFusedInput(t.getShape(), result.getShape()))
      return emitOpError() << "input " << i << " has type " << t
                           << ": an input is f32, bf16 or f16, of the "
                              "result's shape, one element or the result's "
                              "trailing dims";
    types.push_back(t.getElementType());
  }
  ArrayAttr ops = getOps();
  ArrayRef<int64_t> args = getArgs();
  if (ops.empty() || args.size() != 3 * ops.size())
    return emitOpError() << "needs at least one instruction and three args "
                            "per instruction, got "
                         << ops.size() << " ops and " << args.size()
                         << " args";
  const int64_t inputs = getInputs().size();
  Builder b(getContext());
  for (auto [i, a] : llvm::enumerate(ops)) {
    StringRef name = cast<StringAttr>(a).getValue();
    const bool isCast = name == "cast";
    const int arity = isCast ? 1 : fusableArity(name);
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
      if (used && !isCast && !types[v].isF32())
        return emitOpError() << "instruction " << i << " ('" << name
                             << "') reads value " << v << " of "
                             << types[v] << ": only a cast reads a half";
    }
    const int64_t flag = args[3 * i + 2];
    if (isCast) {
      if (flag < 0 || flag > 2)
        return emitOpError() << "instruction " << i
                             << " ('cast') has target " << flag
                             << ": 0 (f32), 1 (bf16) or 2 (f16)";
      types.push_back(flag == 0   ? Type(b.getF32Type())
                      : flag == 1 ? Type(b.getBF16Type())
                                  : Type(b.getF16Type()));
      continue;
    }
    if (flag != 0 && (name != "gelu" || flag != 1))
      return emitOpError() << "instruction " << i << " ('" << name
                           << "') has flag " << flag;
    types.push_back(b.getF32Type());
  }
  if (types.back() != result.getElementType())
    return emitOpError() << "result is " << result.getElementType()
                         << " but the last instruction's value is "
                         << types.back();
  return success();
}
