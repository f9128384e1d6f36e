//===- ExtensionBridge.cpp - Plugins' plain types <-> Tessel IR -----------===//

#include "dialects/tessel/ExtensionBridge.h"
#include "dialects/tessel/TesselOps.h"

#include "tessel/ExtensionHost/Host.h"

#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::tessel;
namespace ext = ::tessel::ext;

/// The element types a plugin names, with their names.
static constexpr std::pair<const char *, Type (*)(MLIRContext *)> kDtypes[] =
    {
        {"f32", [](MLIRContext *c) -> Type { return Float32Type::get(c); }},
        {"f16", [](MLIRContext *c) -> Type { return Float16Type::get(c); }},
        {"bf16", [](MLIRContext *c) -> Type { return BFloat16Type::get(c); }},
        {"i64", [](MLIRContext *c) -> Type { return IntegerType::get(c, 64); }},
        {"i32", [](MLIRContext *c) -> Type { return IntegerType::get(c, 32); }},
        {"bool", [](MLIRContext *c) -> Type { return IntegerType::get(c, 1); }},
};

std::string mlir::tessel::dtypeName(Type elem) {
  for (auto [name, get] : kDtypes)
    if (get(elem.getContext()) == elem)
      return name;
  return "";
}

Type mlir::tessel::elementTypeNamed(MLIRContext *ctx, StringRef name) {
  for (auto [n, get] : kDtypes)
    if (name == n)
      return get(ctx);
  return {};
}

ext::TensorType mlir::tessel::toExtType(Type t) {
  ext::TensorType r;
  auto rt = dyn_cast<RankedTensorType>(t);
  if (!rt)
    return {"", {}};
  r.dtype = dtypeName(rt.getElementType());
  r.shape.assign(rt.getShape().begin(), rt.getShape().end());
  return r;
}

RankedTensorType mlir::tessel::fromExtType(MLIRContext *ctx,
                                           const ext::TensorType &t) {
  Type elem = elementTypeNamed(ctx, t.dtype);
  if (!elem)
    return {};
  for (int64_t d : t.shape)
    if (d < 0)
      return {};
  return RankedTensorType::get(t.shape, elem);
}

ext::Attrs mlir::tessel::toExtAttrs(DictionaryAttr dict) {
  ext::Attrs attrs;
  if (!dict)
    return attrs;
  for (NamedAttribute a : dict) {
    ext::AttrValue v;
    Attribute x = a.getValue();
    if (auto i = dyn_cast<IntegerAttr>(x))
      v = ext::AttrValue::ofInt(i.getValue().getSExtValue());
    else if (auto f = dyn_cast<FloatAttr>(x))
      v = ext::AttrValue::ofFloat(f.getValueAsDouble());
    else if (auto s = dyn_cast<StringAttr>(x))
      v = ext::AttrValue::ofStr(s.str());
    else if (auto is = dyn_cast<DenseI64ArrayAttr>(x))
      v = ext::AttrValue::ofInts({is.asArrayRef().begin(), is.asArrayRef().end()});
    else if (auto fs = dyn_cast<DenseF32ArrayAttr>(x)) {
      v.kind = ext::AttrValue::Kind::Floats;
      for (float f : fs.asArrayRef())
        v.floats.push_back(f);
    } else
      continue;
    attrs[a.getName().str()] = v;
  }
  return attrs;
}

DictionaryAttr mlir::tessel::fromExtAttrs(MLIRContext *ctx,
                                          const ext::Attrs &attrs) {
  Builder b(ctx);
  SmallVector<NamedAttribute> named;
  for (const auto &[name, v] : attrs) {
    Attribute a;
    switch (v.kind) {
    case ext::AttrValue::Kind::Ints:
      a = v.ints.size() == 1 ? Attribute(b.getI64IntegerAttr(v.ints[0]))
                             : Attribute(b.getDenseI64ArrayAttr(v.ints));
      break;
    case ext::AttrValue::Kind::Floats:
      if (v.floats.size() == 1) {
        a = b.getF32FloatAttr(static_cast<float>(v.floats[0]));
      } else {
        SmallVector<float> fs(v.floats.begin(), v.floats.end());
        a = b.getDenseF32ArrayAttr(fs);
      }
      break;
    case ext::AttrValue::Kind::Str:
      a = b.getStringAttr(v.str);
      break;
    }
    named.push_back(b.getNamedAttr(name, a));
  }
  return b.getDictionaryAttr(named);
}

std::string mlir::tessel::unknownCustomOp(StringRef target) {
  return "custom op '" + target.str() +
         "' is not registered: load the plugin that defines it "
         "(--load-plugin lib.so)";
}

FailureOr<Operation *> mlir::tessel::createCustomCall(
    OpBuilder &b, Location loc, StringRef target, ValueRange operands,
    DictionaryAttr attrs, std::string &error) {
  const ext::CustomOp *def = ext::host::findOp(target.str());
  if (!def) {
    error = unknownCustomOp(target);
    return failure();
  }
  std::vector<ext::TensorType> in, out;
  for (Value v : operands)
    in.push_back(toExtType(v.getType()));
  if (std::string why = def->inferTypes(in, toExtAttrs(attrs), out);
      !why.empty()) {
    error = "custom op '" + target.str() + "': " + why;
    return failure();
  }
  SmallVector<Type> types;
  for (const ext::TensorType &t : out) {
    RankedTensorType rt = fromExtType(b.getContext(), t);
    if (!rt) {
      error = "custom op '" + target.str() + "' gives a result of type " +
              ext::toString(t) + ", which Tessel cannot represent";
      return failure();
    }
    types.push_back(rt);
  }
  auto op = CustomCallOp::create(b, loc, types, operands,
                                 b.getStringAttr(target),
                                 attrs && !attrs.empty() ? attrs : nullptr);
  return op.getOperation();
}

//===----------------------------------------------------------------------===//
// ExtGraphBuilder
//===----------------------------------------------------------------------===//

ext::Value ExtGraphBuilder::wrap(Value v) {
  if (!v)
    return {};
  values.push_back(v);
  return {static_cast<int32_t>(values.size() - 1)};
}

Value ExtGraphBuilder::unwrap(ext::Value v) const {
  if (v.id < 0 || size_t(v.id) >= values.size())
    return {};
  return values[v.id];
}

ext::TensorType ExtGraphBuilder::typeOf(ext::Value v) {
  Value x = unwrap(v);
  return x ? toExtType(x.getType()) : ext::TensorType{"", {}};
}

std::vector<ext::Value>
ExtGraphBuilder::create(const std::string &name,
                        const std::vector<ext::Value> &operands,
                        const ext::Attrs &attrs) {
  SmallVector<Value> in;
  for (ext::Value v : operands) {
    Value x = unwrap(v);
    if (!x) {
      fail("'" + name + "': an operand is not a value of this builder");
      return {};
    }
    in.push_back(x);
  }
  MLIRContext *ctx = b.getContext();
  Operation *op = nullptr;
  if (ext::host::findOp(name)) {
    std::string why;
    FailureOr<Operation *> c =
        createCustomCall(b, loc, name, in, fromExtAttrs(ctx, attrs), why);
    if (failed(c)) {
      fail(why);
      return {};
    }
    op = *c;
  } else {
    // A tessel op: elementwise with numpy broadcasting, its result of the
    // broadcast shape and the first operand's element type.
    std::optional<RegisteredOperationName> opName =
        RegisteredOperationName::lookup(name, ctx);
    if (!opName || in.empty()) {
      fail("'" + name + "' is neither a Tessel op nor a registered custom op");
      return {};
    }
    SmallVector<ArrayRef<int64_t>> shapes;
    for (Value x : in)
      shapes.push_back(llvm::cast<RankedTensorType>(x.getType()).getShape());
    FailureOr<SmallVector<int64_t>> shape = broadcastShapes(shapes);
    if (failed(shape)) {
      fail("'" + name + "': the operand shapes do not broadcast");
      return {};
    }
    OperationState state(loc, *opName);
    state.addOperands(in);
    state.addTypes(RankedTensorType::get(
        *shape, llvm::cast<RankedTensorType>(in[0].getType()).getElementType()));
    for (NamedAttribute a : fromExtAttrs(ctx, attrs))
      state.addAttribute(a.getName(), a.getValue());
    op = b.create(state);
    if (failed(mlir::verify(op))) {
      op->erase();
      fail("'" + name + "' does not accept these operands (Graph.h builds "
           "elementwise Tessel ops and custom ops)");
      return {};
    }
  }
  std::vector<ext::Value> results;
  for (Value r : op->getResults())
    results.push_back(wrap(r));
  return results;
}

ext::Value ExtGraphBuilder::cast(ext::Value v, const ext::DType &to) {
  Value x = unwrap(v);
  Type elem = elementTypeNamed(b.getContext(), to);
  if (!x || !elem)
    return fail("cast: " + std::string(!x ? "not a value of this builder"
                                          : "unknown element type '" + to + "'"));
  auto t = llvm::cast<RankedTensorType>(x.getType());
  if (t.getElementType() == elem)
    return v;
  return wrap(CastOp::create(b, loc, t.clone(elem), x));
}

ext::Value ExtGraphBuilder::scalar(double value, const ext::DType &dtype) {
  Type elem = elementTypeNamed(b.getContext(), dtype);
  if (!elem)
    return fail("scalar: unknown element type '" + dtype + "'");
  auto type = RankedTensorType::get({}, elem);
  Attribute a = isa<FloatType>(elem)
                    ? Attribute(b.getFloatAttr(elem, value))
                    : Attribute(b.getIntegerAttr(elem, int64_t(value)));
  return wrap(ConstantOp::create(b, loc, DenseElementsAttr::get(type, a)));
}

ext::Value ExtGraphBuilder::state(const std::string &name,
                                  const ext::TensorType &) {
  return fail("state '" + name + "': only gradient handlers may add state");
}

bool ExtGraphBuilder::assign(ext::Value, ext::Value) {
  fail("assign: only gradient handlers may assign state");
  return false;
}

ext::Value ExtGraphBuilder::reduce(ext::Value) {
  return fail("reduce: only gradient handlers reduce gradients");
}
