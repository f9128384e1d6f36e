//===- ExportArtifact.cpp - tessel IR -> runtime artifact -----------------===//
//
// One instruction per op, in program order. Op names are the dialect's
// mnemonics, which are also the runtime's instruction names; attributes are
// converted op by op so that every default the runtime relies on is explicit.
//
//===----------------------------------------------------------------------===//

#include "tessel/Export/ExportArtifact.h"

#include "dialects/tessel/TesselOps.h"
#include "tessel/runtime/ArtifactBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tessel;
namespace rt = ::tessel::runtime;

namespace {

std::optional<rt::DType> toDType(Type t) {
  if (t.isF32())
    return rt::DType::F32;
  if (t.isSignlessInteger(64))
    return rt::DType::I64;
  if (t.isSignlessInteger(32))
    return rt::DType::I32;
  if (t.isSignlessInteger(1))
    return rt::DType::Bool;
  return std::nullopt;
}

rt::Shape toShape(RankedTensorType t) {
  return rt::Shape(t.getShape().begin(), t.getShape().end());
}

std::vector<int64_t> ints(ArrayRef<int64_t> v) {
  return std::vector<int64_t>(v.begin(), v.end());
}

// The bytes of a dense constant, row-major, bools one byte each.
FailureOr<std::string> constantBytes(DenseElementsAttr attr) {
  Type et = attr.getElementType();
  std::string out;
  auto append = [&](auto range) {
    for (auto v : range)
      out.append(reinterpret_cast<const char *>(&v), sizeof(v));
  };
  if (et.isF32())
    append(attr.getValues<float>());
  else if (et.isSignlessInteger(64))
    append(attr.getValues<int64_t>());
  else if (et.isSignlessInteger(32))
    append(attr.getValues<int32_t>());
  else if (et.isSignlessInteger(1))
    for (bool b : attr.getValues<bool>())
      out.push_back(b ? 1 : 0);
  else
    return failure();
  return out;
}

std::string joinAxes(ArrayAttr axes) {
  std::string s;
  for (auto [i, a] : llvm::enumerate(axes))
    s += (i ? "," : "") + cast<StringAttr>(a).getValue().str();
  return s;
}

class Exporter {
public:
  Exporter(rt::ProgramBuilder &program, const WeightLookup &weights)
      : program(program), weights(weights) {}

  LogicalResult run(func::FuncOp fn);

private:
  FailureOr<int> newBuffer(Operation *op, Value v);
  LogicalResult emitOp(Operation *op);
  FailureOr<rt::Attrs> attrsOf(Operation *op);

  rt::ProgramBuilder &program;
  const WeightLookup &weights;
  llvm::DenseMap<Value, int> buffers;
  // Buffers the program computes (not inputs, weights or constants).
  llvm::DenseSet<int> computed;
};

FailureOr<int> Exporter::newBuffer(Operation *op, Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  std::optional<rt::DType> dt = toDType(t.getElementType());
  if (!dt)
    return op->emitOpError() << "has a result of element type "
                             << t.getElementType()
                             << ", which the runtime does not hold (f32, i64, "
                                "i32, i1)";
  int id = program.addBuffer(*dt, toShape(t));
  buffers[v] = id;
  computed.insert(id);
  return id;
}

static std::string nameAt(Operation *fn, StringRef key, unsigned i,
                          StringRef fallback) {
  if (auto names = fn->getAttrOfType<ArrayAttr>(key))
    if (i < names.size())
      if (auto s = dyn_cast<StringAttr>(names[i]))
        return s.getValue().str();
  return (fallback + Twine(i)).str();
}

LogicalResult Exporter::run(func::FuncOp fn) {
  for (auto [i, arg] : llvm::enumerate(fn.getArguments())) {
    auto t = dyn_cast<RankedTensorType>(arg.getType());
    std::optional<rt::DType> dt = t ? toDType(t.getElementType()) : std::nullopt;
    if (!dt)
      return fn.emitOpError() << "argument " << i << " has type "
                              << arg.getType()
                              << ", which the runtime cannot take as an input";
    buffers[arg] = program.addInput(nameAt(fn, "onnx.input_names", i, "input"),
                                    *dt, toShape(t));
  }
  for (Operation &op : fn.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
        int id = buffers.lookup(v);
        // Outputs live in the arena: copy what the program did not compute.
        if (!computed.contains(id)) {
          FailureOr<int> copy = newBuffer(ret, v);
          if (failed(copy))
            return failure();
          program.addOp("copy", {id}, {*copy});
          id = *copy;
        }
        program.addOutput(nameAt(fn, "onnx.output_names", i, "output"), id);
      }
      continue;
    }
    if (failed(emitOp(&op)))
      return failure();
  }
  return success();
}

LogicalResult Exporter::emitOp(Operation *op) {
  if (auto w = dyn_cast<WeightOp>(op)) {
    RankedTensorType t = w.getType();
    std::optional<rt::DType> dt = toDType(t.getElementType());
    if (!dt)
      return w.emitOpError() << "weight \"" << w.getName()
                             << "\" has element type " << t.getElementType()
                             << ", which the runtime does not hold";
    std::string error;
    FailureOr<WeightData> data = weights(w.getName(), error);
    if (failed(data))
      return w.emitOpError() << "weight \"" << w.getName() << "\": " << error;
    size_t want = t.getNumElements() * rt::dtypeSize(*dt);
    if (data->size != want)
      return w.emitOpError() << "weight \"" << w.getName() << "\" has "
                             << data->size << " bytes, its type " << t
                             << " needs " << want;
    buffers[w] = program.addWeight(w.getName().str(), *dt, toShape(t),
                                   data->data);
    return success();
  }
  if (auto c = dyn_cast<ConstantOp>(op)) {
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    FailureOr<std::string> bytes =
        dense ? constantBytes(dense) : FailureOr<std::string>(failure());
    std::optional<rt::DType> dt = toDType(c.getType().getElementType());
    if (failed(bytes) || !dt)
      return c.emitOpError() << "has a constant of type " << c.getType()
                             << " that the runtime cannot hold";
    buffers[c] = program.addConstant(*dt, toShape(c.getType()), bytes->data());
    return success();
  }
  // A pinned spec changes nothing on one device.
  if (auto sc = dyn_cast<ShardConstraintOp>(op)) {
    buffers[sc] = buffers.lookup(sc.getInput());
    return success();
  }
  if (op->getDialect() != op->getContext()->getLoadedDialect<TesselDialect>())
    return op->emitOpError() << "has no runtime instruction";
  FailureOr<rt::Attrs> attrs = attrsOf(op);
  if (failed(attrs))
    return failure();
  std::vector<int> operands, results;
  for (Value v : op->getOperands())
    operands.push_back(buffers.lookup(v));
  for (Value v : op->getResults()) {
    FailureOr<int> id = newBuffer(op, v);
    if (failed(id))
      return failure();
    results.push_back(*id);
  }
  std::string name;
  if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
    name = loc.getName().str();
  program.addOp(op->getName().stripDialect().str(), operands, results, *attrs,
                name);
  return success();
}

FailureOr<rt::Attrs> Exporter::attrsOf(Operation *op) {
  rt::Attrs a;
  bool known = true;
  llvm::TypeSwitch<Operation *>(op)
      .Case<NegOp, ExpOp, LogOp, SqrtOp, RsqrtOp, ReciprocalOp, AbsOp, TanhOp,
            ErfOp, SigmoidOp, ReluOp, NotOp, AddOp, SubOp, MulOp, DivOp, PowOp,
            MaxOp, MinOp, WhereOp, MatmulOp, ReshapeOp, ExpandOp,
            GlobalAvgPoolOp>([](Operation *) {})
      .Case([&](GeluOp o) { a.i("tanh_approximation", o.getTanhApproximation()); })
      .Case([&](CastOp o) {
        a.s("to", rt::dtypeName(*toDType(o.getType().getElementType())));
      })
      .Case([&](CompareOp o) {
        a.s("predicate", stringifyComparePredicate(o.getPredicate()).str());
      })
      .Case([&](GemmOp o) {
        a.i("trans_a", o.getTransA()).i("trans_b", o.getTransB());
        a.f("alpha", o.getAlpha().convertToFloat());
        a.f("beta", o.getBeta().convertToFloat());
      })
      .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>([&](auto o) {
        a.is("dims", ints(o.getDims())).i("keep_dims", o.getKeepDims());
      })
      .Case<SoftmaxOp, LogSoftmaxOp>([&](auto o) { a.i("axis", o.getAxis()); })
      .Case<LayerNormOp, RmsNormOp>([&](auto o) {
        a.i("axis", o.getAxis()).f("epsilon", o.getEpsilon().convertToFloat());
      })
      .Case([&](BatchNormOp o) {
        a.f("epsilon", o.getEpsilon().convertToFloat());
      })
      .Case([&](GatherOp o) { a.i("axis", o.getAxis()); })
      .Case([&](TransposeOp o) { a.is("perm", ints(o.getPerm())); })
      .Case([&](SliceOp o) {
        a.is("starts", ints(o.getStarts()))
            .is("ends", ints(o.getLimits()))
            .is("steps", ints(o.getStrides()));
      })
      .Case([&](ConcatOp o) { a.i("axis", o.getDim()); })
      .Case([&](SplitOp o) {
        a.i("axis", o.getDim()).is("sizes", ints(o.getSizes()));
      })
      .Case([&](Conv2DOp o) {
        a.is("strides", ints(o.getStrides()))
            .is("pads", ints(o.getPads()))
            .is("dilations", ints(o.getDilations()))
            .i("group", o.getGroup());
      })
      .Case<MaxPoolOp, AvgPoolOp>([&](auto o) {
        a.is("kernel", ints(o.getKernel()))
            .is("strides", ints(o.getStrides()))
            .is("pads", ints(o.getPads()))
            .i("count_include_pad", o.getCountIncludePad())
            .i("ceil_mode", o.getCeilMode());
      })
      .Case<AllReduceOp>([&](AllReduceOp o) {
        a.s("axes", joinAxes(o.getAxes()))
            .s("kind", stringifyReductionKind(o.getKind()).str());
      })
      .Case<AllGatherOp>([&](AllGatherOp o) {
        a.s("axes", joinAxes(o.getAxes())).i("dim", o.getDim());
      })
      .Case<ReduceScatterOp>([&](ReduceScatterOp o) {
        a.s("axes", joinAxes(o.getAxes()))
            .s("kind", stringifyReductionKind(o.getKind()).str())
            .i("dim", o.getDim());
      })
      .Case<AllToAllOp>([&](AllToAllOp o) {
        a.s("axes", joinAxes(o.getAxes()))
            .i("split_dim", o.getSplitDim())
            .i("concat_dim", o.getConcatDim());
      })
      .Case<CollectivePermuteOp>([&](CollectivePermuteOp o) {
        a.s("axes", joinAxes(o.getAxes())).is("pairs", ints(o.getPairs()));
      })
      .Case<BroadcastOp>([&](BroadcastOp o) {
        a.s("axes", joinAxes(o.getAxes())).i("root", o.getRoot());
      })
      .Case<SendOp>([&](SendOp o) {
        a.s("axes", joinAxes(o.getAxes()))
            .i("peer", o.getTarget())
            .i("tag", o.getTag());
      })
      .Case<RecvOp>([&](RecvOp o) {
        a.s("axes", joinAxes(o.getAxes()))
            .i("peer", o.getSource())
            .i("tag", o.getTag());
      })
      .Default([&](Operation *) { known = false; });
  if (!known)
    return op->emitOpError() << "has no runtime instruction";
  return a;
}

} // namespace

LogicalResult mlir::tessel::exportArtifact(ModuleOp module,
                                           const WeightLookup &weights,
                                           StringRef path,
                                           const ExportOptions &options) {
  func::FuncOp entry;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal() || fn.isPrivate())
      continue;
    if (!options.entry.empty() ? fn.getSymName() == options.entry : !entry) {
      entry = fn;
      continue;
    }
    if (options.entry.empty())
      return module.emitError()
             << "the module has several public functions (@"
             << entry.getSymName() << ", @" << fn.getSymName()
             << "); name the entry";
  }
  if (!entry)
    return module.emitError() << "the module has no entry function"
                              << (options.entry.empty()
                                      ? ""
                                      : (" @" + options.entry).c_str());
  if (!llvm::hasSingleElement(entry.getBody()))
    return entry.emitOpError() << "must have a single block to be exported";

  rt::ArtifactBuilder builder(options.producer);
  if (failed(Exporter(builder.rank(0), weights).run(entry)))
    return failure();
  rt::Status status = builder.write(path.str());
  if (!status)
    return module.emitError() << "cannot write the artifact " << path << ": "
                              << status.message();
  return success();
}
