//===- ExtensionBridge.h - Plugins' plain types <-> Tessel IR ---*- C++ -*-===//
//
// How the compiler meets the extension API (include/tessel/Extension/):
// conversions between its plain types and MLIR's, and the GraphBuilder a
// plugin's gradient rule or gradient handler builds IR through.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_DIALECT_EXTENSIONBRIDGE_H
#define TESSEL_DIALECT_EXTENSIONBRIDGE_H

#include "tessel/Extension/Graph.h"
#include "tessel/Extension/Op.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <optional>
#include <vector>

namespace mlir::tessel {

/// On a `tessel.weight ... zeros` that a gradient handler added: the state
/// is each rank's own (an error-feedback residual differs per rank), so the
/// artifact records no global layout and a checkpoint restores it on the
/// rank that saved it.
inline constexpr ::llvm::StringLiteral kPerRankStateAttrName =
    "tessel.per_rank_state";

/// "f32", "f16", "bf16", "i64", "i32", "bool"; "" for other types.
std::string dtypeName(Type elem);
/// The element type named `name`, or null.
Type elementTypeNamed(MLIRContext *ctx, StringRef name);
::tessel::ext::TensorType toExtType(Type t);
RankedTensorType fromExtType(MLIRContext *ctx, const ::tessel::ext::TensorType &t);
::tessel::ext::Attrs toExtAttrs(DictionaryAttr dict);
DictionaryAttr fromExtAttrs(MLIRContext *ctx, const ::tessel::ext::Attrs &attrs);

/// A GraphBuilder appending ops at b's insertion point, at `loc`. state()
/// and reduce() fail unless a subclass provides them.
class ExtGraphBuilder : public ::tessel::ext::GraphBuilder {
public:
  ExtGraphBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  ::tessel::ext::Value wrap(Value v);
  /// The IR value of `v`, or null when `v` is not one of this builder's.
  Value unwrap(::tessel::ext::Value v) const;

  ::tessel::ext::TensorType typeOf(::tessel::ext::Value v) override;
  std::vector<::tessel::ext::Value>
  create(const std::string &name,
         const std::vector<::tessel::ext::Value> &operands,
         const ::tessel::ext::Attrs &attrs) override;
  ::tessel::ext::Value cast(::tessel::ext::Value v,
                            const ::tessel::ext::DType &to) override;
  ::tessel::ext::Value scalar(double value,
                              const ::tessel::ext::DType &dtype) override;
  ::tessel::ext::Value state(const std::string &name,
                             const ::tessel::ext::TensorType &type) override;
  bool assign(::tessel::ext::Value state, ::tessel::ext::Value value) override;
  ::tessel::ext::Value reduce(::tessel::ext::Value v) override;
  std::string error() const override { return lastError; }

protected:
  ::tessel::ext::Value fail(const std::string &message) {
    lastError = message;
    return {};
  }

  OpBuilder &b;
  Location loc;
  std::vector<Value> values;
  std::string lastError;
};

/// Creates the custom op `target` on `operands`, its result types from its
/// type rule; fails (with `error`) when it is unknown or rejects them.
FailureOr<Operation *> createCustomCall(OpBuilder &b, Location loc,
                                        StringRef target, ValueRange operands,
                                        DictionaryAttr attrs,
                                        std::string &error);

/// Why `target` is not usable: "custom op 'x' is not registered ...".
std::string unknownCustomOp(StringRef target);

} // namespace mlir::tessel

#endif // TESSEL_DIALECT_EXTENSIONBRIDGE_H
