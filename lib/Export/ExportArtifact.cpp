//===- ExportArtifact.cpp - tessel IR -> runtime artifact -----------------===//
//
// One program per rank of the mesh, one instruction per op in program order.
// Op names are the dialect's mnemonics, which are also the runtime's
// instruction names; attributes are converted op by op so that every default
// the runtime relies on is explicit. What depends on the rank (the group of a
// collective, the block of a weight or input a rank holds) is resolved here
// from the rank's mesh coordinates: the artifact is MPMD, the IR is SPMD.
//
//===----------------------------------------------------------------------===//

#include "tessel/Export/ExportArtifact.h"
#include "tessel/Export/MemoryReport.h"

#include "dialects/tessel/ExtensionBridge.h"
#include "dialects/tessel/TesselOps.h"
#include "tessel/runtime/ArtifactBuilder.h"
#include "tessel/runtime/OpKind.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "tessel/runtime/HalfFloat.h"
#include "tessel/support/Checked.h"
#include "dialects/tessel/PipelineAttrs.h"
#include "tessel/ExtensionHost/Host.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/MapVector.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <set>

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
  if (t.isBF16())
    return rt::DType::BF16;
  if (t.isF16())
    return rt::DType::F16;
  if (t.isF64())
    return rt::DType::F64;
  return std::nullopt;
}

rt::Shape toShape(RankedTensorType t) {
  return rt::Shape(t.getShape().begin(), t.getShape().end());
}

std::vector<int64_t> ints(ArrayRef<int64_t> v) {
  return std::vector<int64_t>(v.begin(), v.end());
}

/// The most bytes one constant of a program may hold: the program (a
/// protobuf message) carries them and cannot pass 2 GiB.
constexpr uint64_t kMaxConstantBytes = uint64_t(1) << 30;

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
  else if (et.isF64())
    append(attr.getValues<double>());
  else if (et.isSignlessInteger(64))
    append(attr.getValues<int64_t>());
  else if (et.isSignlessInteger(32))
    append(attr.getValues<int32_t>());
  else if (et.isSignlessInteger(1))
    for (bool b : attr.getValues<bool>())
      out.push_back(b ? 1 : 0);
  else if (et.isBF16() || et.isF16())
    for (const APFloat &v : attr.getValues<APFloat>()) {
      const uint16_t bits =
          static_cast<uint16_t>(v.bitcastToAPInt().getZExtValue());
      out.append(reinterpret_cast<const char *>(&bits), sizeof bits);
    }
  else
    return failure();
  return out;
}

/// The mesh a program runs on and the coordinates of its ranks; a module
/// without a mesh runs on one rank.
class MeshLayout {
public:
  MeshLayout() = default;
  explicit MeshLayout(MeshOp mesh) {
    for (auto [name, size] : llvm::zip(mesh.getAxisNames(), mesh.getAxisSizes())) {
      names.push_back(cast<StringAttr>(name).getValue().str());
      sizes.push_back(size);
    }
  }
  int64_t numRanks() const {
    // A verified mesh has at most kMaxMeshDevices; saturated all the same.
    return ::tessel::checkedProduct(sizes).value_or(INT64_MAX);
  }
  int64_t axisIndex(StringRef axis) const {
    return llvm::find(names, axis) - names.begin();
  }
  /// The coordinates of `rank`, the first axis major.
  SmallVector<int64_t> coords(int64_t rank) const {
    SmallVector<int64_t> c(sizes.size());
    for (int64_t i = sizes.size() - 1; i >= 0; --i) {
      c[i] = rank % sizes[i];
      rank /= sizes[i];
    }
    return c;
  }
  int64_t rankOf(ArrayRef<int64_t> c) const {
    int64_t r = 0;
    for (auto [ci, size] : llvm::zip(c, sizes))
      r = r * size + ci;
    return r;
  }
  /// The index of `rank` along `axes` (the first axis major), and the size of
  /// the group those axes span.
  std::pair<int64_t, int64_t> indexAlong(ArrayRef<StringRef> axes,
                                         int64_t rank) const {
    SmallVector<int64_t> c = coords(rank);
    int64_t index = 0, count = 1;
    for (StringRef a : axes) {
      int64_t i = axisIndex(a);
      index = index * sizes[i] + c[i];
      count *= sizes[i];
    }
    return {index, count};
  }
  /// The global ranks of `rank`'s group along `axes`, in group order.
  std::vector<int64_t> group(ArrayRef<StringRef> axes, int64_t rank) const {
    SmallVector<int64_t> c = coords(rank);
    int64_t count = indexAlong(axes, rank).second;
    std::vector<int64_t> ranks;
    for (int64_t g = 0; g < count; ++g) {
      int64_t rest = g;
      for (int64_t k = axes.size() - 1; k >= 0; --k) {
        int64_t i = axisIndex(axes[k]);
        c[i] = rest % sizes[i];
        rest /= sizes[i];
      }
      ranks.push_back(rankOf(c));
    }
    return ranks;
  }
  std::vector<std::pair<std::string, int64_t>> axes() const {
    std::vector<std::pair<std::string, int64_t>> out;
    for (auto [n, s] : llvm::zip(names, sizes))
      out.emplace_back(n, s);
    return out;
  }

private:
  SmallVector<std::string> names;
  SmallVector<int64_t> sizes;
};

SmallVector<StringRef> axisNames(ArrayRef<StringAttr> axes) {
  SmallVector<StringRef> out;
  for (StringAttr a : axes)
    out.push_back(a.getValue());
  return out;
}

SmallVector<StringRef> axisNames(ArrayAttr axes) {
  SmallVector<StringRef> out;
  for (Attribute a : axes)
    out.push_back(cast<StringAttr>(a).getValue());
  return out;
}

/// Streams the block [starts, starts + sizes) of a view of a row-major
/// tensor of `shape` (the view: the box [origin, origin + view) of it, a
/// piece of a fused parameter, or the whole) to `sink`, in runs that are
/// contiguous in the source, read a window at a time: no block is ever
/// held whole. Elements past the view's end (the pad of a padded shard)
/// are zero.
rt::Status streamBlock(const WeightData &src, ArrayRef<int64_t> shape,
                       size_t elemSize, ArrayRef<int64_t> origin,
                       ArrayRef<int64_t> view, ArrayRef<int64_t> starts,
                       ArrayRef<int64_t> sizes, StringRef weightName,
                       const rt::ProgramBuilder::ByteSink &sink) {
  const int64_t rank = shape.size();
  constexpr size_t kWindow = size_t(4) << 20;
  std::string window, error;
  // Bytes [elemOffset * elemSize, + bytes) of the source, a window at a
  // time when they are read from a file.
  auto copy = [&](uint64_t elemOffset, uint64_t bytes) -> rt::Status {
    uint64_t at = elemOffset * elemSize;
    if (at + bytes > src.size)
      return rt::Status::error("weight '" + weightName.str() +
                               "': a block reaches past its data");
    if (src.data)
      return sink(static_cast<const char *>(src.data) + at, bytes);
    while (bytes) {
      size_t n = std::min<uint64_t>(bytes, kWindow);
      window.resize(n);
      if (!src.read(at, n, window.data(), error))
        return rt::Status::error("weight '" + weightName.str() + "': " +
                                 error);
      TSL_RETURN_IF_ERROR(sink(window.data(), n));
      at += n;
      bytes -= n;
    }
    return rt::Status::ok();
  };
  if (rank == 0)
    return copy(0, elemSize);
  for (int64_t s : sizes)
    if (s == 0)
      return rt::Status::ok();
  SmallVector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  // The run dim k: every dim after it is whole in the source, the view and
  // the block, so a run covers sizes[k] rows of `inner` elements.
  int64_t k = rank - 1;
  while (k > 0 && starts[k] == 0 && sizes[k] == view[k] && origin[k] == 0 &&
         view[k] == shape[k])
    --k;
  int64_t inner = 1;
  for (int64_t d = k + 1; d < rank; ++d)
    inner *= shape[d];
  static const char zeros[1 << 16] = {};
  auto zeroFill = [&](uint64_t bytes) -> rt::Status {
    while (bytes) {
      size_t n = std::min<uint64_t>(bytes, sizeof(zeros));
      TSL_RETURN_IF_ERROR(sink(zeros, n));
      bytes -= n;
    }
    return rt::Status::ok();
  };
  // Over every index of the dims before k, major to minor.
  SmallVector<int64_t> idx(k, 0);
  while (true) {
    bool outside = false;
    uint64_t off = 0;
    for (int64_t d = 0; d < k; ++d) {
      int64_t g = starts[d] + idx[d];
      outside |= g >= view[d];
      off += (origin[d] + g) * strides[d];
    }
    int64_t have = outside ? 0
                           : std::clamp<int64_t>(view[k] - starts[k], 0,
                                                 sizes[k]);
    if (have)
      TSL_RETURN_IF_ERROR(copy(off + (origin[k] + starts[k]) * strides[k],
                               uint64_t(have) * inner * elemSize));
    if (have < sizes[k])
      TSL_RETURN_IF_ERROR(
          zeroFill(uint64_t(sizes[k] - have) * inner * elemSize));
    int64_t d = k - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < sizes[d])
        break;
      idx[d] = 0;
    }
    if (d < 0)
      break;
  }
  return rt::Status::ok();
}

/// A sink that takes bf16 or f16 (`half`) bytes and passes them on to
/// `sink` as f32, exactly: an f32 master's data (-tessel-master-weights).
rt::ProgramBuilder::ByteSink widenedSink(rt::DType half,
                                         rt::ProgramBuilder::ByteSink sink) {
  return [half, sink = std::move(sink),
          pending = std::string()](const void *data,
                                   size_t size) mutable -> rt::Status {
    pending.append(static_cast<const char *>(data), size);
    const size_t n = pending.size() / 2;
    std::vector<uint16_t> halves(n);
    std::memcpy(halves.data(), pending.data(), 2 * n);
    std::vector<float> wide(n);
    rt::widenHalves(half, halves.data(), wide.data(), n);
    pending.erase(0, 2 * n);
    return sink(wide.data(), n * sizeof(float));
  };
}

/// The block of a tensor of `globalShape` that `rank` holds under `spec`.
void shardBlock(const MeshLayout &mesh, TensorShardingAttr spec, int64_t rank,
                ArrayRef<int64_t> globalShape, SmallVectorImpl<int64_t> &starts,
                SmallVectorImpl<int64_t> &sizes) {
  for (auto [d, size] : llvm::enumerate(globalShape)) {
    starts.push_back(0);
    sizes.push_back(size);
    if (!spec || spec.getDims()[d].getAxes().empty())
      continue;
    DimShardingAttr dim = spec.getDims()[d];
    auto [index, count] = mesh.indexAlong(axisNames(dim.getAxes()), rank);
    int64_t local = (size + dim.getPad()) / count;
    starts.back() = index * local;
    sizes.back() = local;
  }
}

// What an op becomes in the artifact: the generated encoders
// (dialects/tessel/ExportEncoders.inc, from each op's Tessel_Instruction)
// fill it through these overloads, one per C++ type an attribute getter
// returns.
struct InstructionEncoding {
  std::string name;
  rt::Attrs attrs;
};

void encodeAttr(rt::Attrs &a, const char *name, bool v) { a.i(name, v); }
template <typename T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
void encodeAttr(rt::Attrs &a, const char *name, T v) {
  a.i(name, static_cast<int64_t>(v));
}
template <typename E, std::enable_if_t<std::is_enum_v<E>, int> = 0>
void encodeAttr(rt::Attrs &a, const char *name, E v) {
  a.s(name, stringifyEnum(v).str());
}
void encodeAttr(rt::Attrs &a, const char *name, const APFloat &v) {
  a.f(name, v.convertToFloat());
}
void encodeAttr(rt::Attrs &a, const char *name, ArrayRef<int64_t> v) {
  a.is(name, ints(v));
}
void encodeAttr(rt::Attrs &a, const char *name, std::vector<int64_t> v) {
  a.is(name, std::move(v));
}
void encodeAttr(rt::Attrs &a, const char *name, StringRef v) {
  a.s(name, v.str());
}

/// The runtime's name of a tensor type's element type ("" when it holds none).
std::string dtypeNameOf(Type t) {
  std::optional<rt::DType> dt =
      toDType(cast<RankedTensorType>(t).getElementType());
  return dt ? rt::dtypeName(*dt) : "";
}

/// tessel.fused_elementwise's program as the runtime reads it: per
/// instruction [kind, a, b, flag], `kind` the runtime's number of the op
/// (-1 for a name it does not know: the load-time checks refuse it).
std::vector<int64_t> fusedElementwiseProgram(FusedElementwiseOp op) {
  std::vector<int64_t> program;
  ArrayRef<int64_t> args = op.getArgs();
  for (auto [i, name] : llvm::enumerate(op.getOps())) {
    auto kind = rt::parseOpKind(cast<StringAttr>(name).getValue().str());
    program.push_back(kind ? static_cast<int64_t>(*kind) : -1);
    program.insert(program.end(), args.begin() + 3 * i,
                   args.begin() + 3 * i + 3);
  }
  return program;
}

#include "dialects/tessel/ExportEncoders.inc"

/// Records in the manifest every plugin whose ops `module` runs.
void recordPlugins(ModuleOp module, rt::ArtifactBuilder &builder) {
  std::set<std::string> needed;
  module.walk([&](CustomCallOp call) {
    std::string plugin = ::tessel::ext::host::pluginOfOp(call.getTarget().str());
    if (!plugin.empty() && plugin != "tessel")
      needed.insert(plugin);
  });
  for (const ::tessel::ext::host::PluginRecord &p :
       ::tessel::ext::host::loadedPlugins())
    if (needed.count(p.name))
      builder.requirePlugin(p.name, p.version);
}

/// The attributes of a tessel.custom_call (its `attrs` dictionary) as
/// instruction attributes, which its kernel reads by name.
void encodeCustomCallAttrs(CustomCallOp call, rt::Attrs &a) {
  if (!call.getAttrsAttr())
    return;
  for (NamedAttribute n : call.getAttrsAttr()) {
    std::string name = n.getName().str();
    Attribute v = n.getValue();
    if (auto i = dyn_cast<IntegerAttr>(v))
      a.i(name, i.getValue().getSExtValue());
    else if (auto f = dyn_cast<FloatAttr>(v))
      a.f(name, static_cast<float>(f.getValueAsDouble()));
    else if (auto str = dyn_cast<StringAttr>(v))
      a.s(name, str.str());
    else if (auto is = dyn_cast<DenseI64ArrayAttr>(v))
      a.is(name, ints(is.asArrayRef()));
    else if (auto fs = dyn_cast<DenseF32ArrayAttr>(v))
      a.fs(name, std::vector<float>(fs.asArrayRef().begin(),
                                    fs.asArrayRef().end()));
  }
}

class Exporter {
public:
  /// Weights to export as zero-filled STATE buffers (by name).
  llvm::StringSet<> emptyStates;
  /// A pipeline rank's program: instructions carry their schedule action.
  bool pipelined = false;
  Exporter(rt::ProgramBuilder &program, const WeightLookup &weights,
           const MeshLayout &mesh, int64_t rank)
      : program(program), weights(weights), mesh(mesh), rank(rank) {}

  LogicalResult run(func::FuncOp fn);

private:
  FailureOr<int> newBuffer(Operation *op, Value v);
  FailureOr<int> newBuffer(Operation *op, RankedTensorType t);
  LogicalResult emitOp(Operation *op);
  int inPlaceState(Operation *op, Value result);
  LogicalResult emitWeight(WeightOp w);
  void setStateLayout(WeightOp w, int id, ArrayRef<int64_t> global);
  LogicalResult emitInput(func::FuncOp fn, BlockArgument arg);
  FailureOr<int> emitOutput(func::ReturnOp ret, unsigned i, int id);

public:
  /// The world ranks of this rank's group along `axes` (collectives).
  std::vector<int64_t> groupOf(ArrayAttr axes) const {
    return mesh.group(axisNames(axes), rank);
  }

private:

  rt::ProgramBuilder &program;
  const WeightLookup &weights;
  const MeshLayout &mesh;
  int64_t rank;
  llvm::DenseMap<Value, int> buffers;
  // Weights already stored, by artifact name and global spec.
  std::map<std::string, int> weightBuffers;
  // Buffers the program computes (not inputs, weights or constants).
  llvm::DenseSet<int> computed;
  // The STATE buffers (weights that persist across steps).
  llvm::DenseSet<int> states;
  // The last op (assigns aside) that reads a weight of each name, directly
  // or through a shard_constraint's alias: found once per function.
  llvm::StringMap<Operation *> lastRead;
  // (value, state buffer) of the tessel.assigns whose weight is still read
  // later, by the op that reads it last: copied right after that op.
  llvm::DenseMap<Operation *, std::vector<std::pair<int, int>>> pendingAssigns;
  // Asynchronous collectives (gradient buckets' all_reduces, prefetched
  // parameters' all_gathers, gradients' reduce_scatters) not waited for yet: their result -> (operand
  // buffer, result buffer).
  llvm::MapVector<Value, std::pair<int, int>> inFlight;
  /// The `wait` of each in-flight collective whose result `op` reads (all
  /// of them before the return).
  void waitBefore(Operation *op);
};

/// Where `op`'s read of its operands ends: an asynchronous all_gather (FSDP's
/// prefetch) or reduce_scatter (ZeRO's gradients) reads its operand until
/// its wait, right before the first user of its result; any other op when it
/// runs.
static Operation *readEnd(Operation *op) {
  if (!isa<AllGatherOp, ReduceScatterOp>(op) ||
      !op->hasAttr(TesselDialect::kAsyncAttrName))
    return op;
  Operation *first = nullptr;
  for (Operation *user : op->getUsers())
    if (user->getBlock() == op->getBlock() &&
        (!first || user->isBeforeInBlock(first)))
      first = user;
  return first ? first : op;
}

void Exporter::waitBefore(Operation *op) {
  bool all = isa<func::ReturnOp>(op);
  for (auto it = inFlight.begin(); it != inFlight.end();) {
    if (all || llvm::is_contained(op->getOperands(), it->first)) {
      program.addOp("wait", {it->second.first, it->second.second}, {});
      it = inFlight.erase(it);
    } else {
      ++it;
    }
  }
}

FailureOr<int> Exporter::newBuffer(Operation *op, RankedTensorType t) {
  std::optional<rt::DType> dt = toDType(t.getElementType());
  if (!dt)
    return op->emitOpError()
           << "has a result of element type " << t.getElementType()
           << ", which the runtime does not hold (f32, i64, "
              "i32, i1, bf16, f16, f64)";
  int id = program.addBuffer(*dt, toShape(t));
  computed.insert(id);
  return id;
}

FailureOr<int> Exporter::newBuffer(Operation *op, Value v) {
  FailureOr<int> id = newBuffer(op, cast<RankedTensorType>(v.getType()));
  if (succeeded(id))
    buffers[v] = *id;
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

// The global spec of argument/result `i` as the partitioner recorded it.
static TensorShardingAttr globalSpec(func::FuncOp fn, StringRef key,
                                     unsigned i) {
  auto specs = fn->getAttrOfType<ArrayAttr>(key);
  if (!specs || i >= specs.size())
    return {};
  return dyn_cast<TensorShardingAttr>(specs[i]);
}

// The global shape of a value of local type `local` sharded by `spec`.
static SmallVector<int64_t> globalShapeOf(const MeshLayout &mesh,
                                          TensorShardingAttr spec,
                                          RankedTensorType local) {
  SmallVector<int64_t> shape(local.getShape());
  if (!spec)
    return shape;
  for (auto [d, dim] : llvm::enumerate(spec.getDims()))
    if (!dim.getAxes().empty())
      shape[d] = shape[d] * mesh.indexAlong(axisNames(dim.getAxes()), 0).second -
                 dim.getPad();
  return shape;
}

// Inputs arrive whole on every rank; a sharded one is sliced to the rank's
// block by a first instruction.
LogicalResult Exporter::emitInput(func::FuncOp fn, BlockArgument arg) {
  unsigned i = arg.getArgNumber();
  auto local = dyn_cast<RankedTensorType>(arg.getType());
  std::optional<rt::DType> dt =
      local ? toDType(local.getElementType()) : std::nullopt;
  if (!dt)
    return fn.emitOpError() << "argument " << i << " has type "
                            << arg.getType()
                            << ", which the runtime cannot take as an input";
  TensorShardingAttr spec = globalSpec(fn, TesselDialect::kGlobalArgShardingsAttrName, i);
  SmallVector<int64_t> global = globalShapeOf(mesh, spec, local);
  std::string name = nameAt(fn, TesselDialect::kInputNamesAttrName, i, "input");
  int whole = program.addInput(name, *dt, rt::Shape(global.begin(), global.end()));
  if (ArrayRef<int64_t>(global) == local.getShape()) {
    buffers[arg] = whole;
    return success();
  }
  SmallVector<int64_t> starts, sizes;
  shardBlock(mesh, spec, rank, global, starts, sizes);
  // A padded dim: the rank's block may reach past the input's end (into the
  // pad); its part inside is sliced and the rest filled with zeros, as a
  // padded weight is on load, so that the pad adds nothing to the sums it
  // enters.
  // An argument's `tessel.pad_value` fills it instead (the labels' -100).
  SmallVector<int64_t> inside(sizes);
  for (auto [d, size] : llvm::enumerate(global))
    inside[d] = std::clamp<int64_t>(size - starts[d], 0, sizes[d]);
  Type elem = local.getElementType();
  Attribute padValue = fn.getArgAttr(i, TesselDialect::kPadValueAttrName);
  auto padBytes = [&](RankedTensorType t) {
    std::string bytes(tensorBytes(t), '\0');
    const size_t es = elem.getIntOrFloatBitWidth() / 8;
    const int64_t n = t.getNumElements();
    if (auto iv = dyn_cast_if_present<IntegerAttr>(padValue)) {
      const int64_t v = iv.getInt();
      for (int64_t k = 0; k < n; ++k)
        std::memcpy(bytes.data() + k * es, &v, std::min(es, sizeof(v)));
    } else if (auto fv = dyn_cast_if_present<FloatAttr>(padValue)) {
      const float v = static_cast<float>(fv.getValueAsDouble());
      for (int64_t k = 0; k < n; ++k)
        std::memcpy(bytes.data() + k * es, &v, std::min(es, sizeof(v)));
    }
    return bytes;
  };
  int current = whole;
  SmallVector<int64_t> shape(inside);
  if (llvm::is_contained(inside, 0)) {
    std::string zeros = padBytes(local);
    current = program.addConstant(*dt, toShape(local), zeros.data());
    shape.assign(local.getShape().begin(), local.getShape().end());
  } else {
    FailureOr<int> id = newBuffer(
        fn, RankedTensorType::get(inside, elem));
    if (failed(id))
      return failure();
    SmallVector<int64_t> ends, steps(starts.size(), 1);
    for (auto [s, n] : llvm::zip(starts, inside))
      ends.push_back(s + n);
    program.addOp("slice", {whole}, {*id},
                  rt::Attrs().is("starts", ints(starts)).is("ends", ints(ends)).is(
                      "steps", ints(steps)));
    current = *id;
  }
  for (auto [d, n] : llvm::enumerate(sizes)) {
    if (shape[d] == n)
      continue;
    SmallVector<int64_t> zeroShape(shape);
    zeroShape[d] = n - shape[d];
    auto zeroType = RankedTensorType::get(zeroShape, elem);
    std::string zeros = padBytes(zeroType);
    int z = program.addConstant(*dt, toShape(zeroType), zeros.data());
    shape[d] = n;
    FailureOr<int> id = newBuffer(fn, RankedTensorType::get(shape, elem));
    if (failed(id))
      return failure();
    program.addOp("concat", {current, z}, {*id}, rt::Attrs().i("axis", d));
    current = *id;
  }
  buffers[arg] = current;
  return success();
}

// Outputs leave whole: a sharded result is all-gathered (and its pad sliced
// off), a partial one all-reduced, so that rank 0 can write it.
FailureOr<int> Exporter::emitOutput(func::ReturnOp ret, unsigned i, int id) {
  auto fn = ret->getParentOfType<func::FuncOp>();
  auto type = cast<RankedTensorType>(ret.getOperand(i).getType());
  TensorShardingAttr spec = globalSpec(fn, TesselDialect::kGlobalResultShardingsAttrName, i);
  if (!spec)
    return id;
  SmallVector<int64_t> shape(type.getShape());
  for (PartialAxisAttr p : spec.getPartials()) {
    FailureOr<int> out = newBuffer(ret, RankedTensorType::get(shape, type.getElementType()));
    if (failed(out))
      return failure();
    std::vector<int64_t> group = mesh.group({p.getAxis().getValue()}, rank);
    program.addOp("all_reduce", {id}, {*out},
                  rt::Attrs()
                      .s("kind", stringifyReductionKind(p.getKind()).str())
                      .is("group", group));
    id = *out;
  }
  for (auto [d, dim] : llvm::enumerate(spec.getDims())) {
    if (dim.getAxes().empty())
      continue;
    SmallVector<StringRef> axes = axisNames(dim.getAxes());
    shape[d] *= mesh.indexAlong(axes, rank).second;
    FailureOr<int> out = newBuffer(ret, RankedTensorType::get(shape, type.getElementType()));
    if (failed(out))
      return failure();
    program.addOp("all_gather", {id}, {*out},
                  rt::Attrs().i("dim", d).is("group", mesh.group(axes, rank)));
    id = *out;
    if (int64_t pad = dim.getPad()) {
      SmallVector<int64_t> starts(shape.size(), 0), ends(shape), steps(shape.size(), 1);
      shape[d] -= pad;
      ends[d] = shape[d];
      FailureOr<int> cut = newBuffer(ret, RankedTensorType::get(shape, type.getElementType()));
      if (failed(cut))
        return failure();
      program.addOp("slice", {id}, {*cut},
                    rt::Attrs().is("starts", ints(starts)).is("ends", ints(ends)).is(
                        "steps", ints(steps)));
      id = *cut;
    }
  }
  return id;
}


LogicalResult Exporter::run(func::FuncOp fn) {
  for (BlockArgument arg : fn.getArguments())
    if (failed(emitInput(fn, arg)))
      return failure();
  for (Operation &op : fn.getBody().front()) {
    if (isa<AssignOp>(op))
      continue;
    for (Value v : op.getOperands()) {
      while (auto sc = v.getDefiningOp<ShardConstraintOp>())
        v = sc.getInput();
      if (auto w = v.getDefiningOp<WeightOp>()) {
        Operation *end = readEnd(&op);
        Operation *&last = lastRead[w.getName()];
        if (!last || last->isBeforeInBlock(end))
          last = end;
      }
    }
  }
  for (Operation &op : fn.getBody().front()) {
    if (!inFlight.empty())
      waitBefore(&op);
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      // Weights the results read: their new values once the results hold
      // the old ones.
      for (auto [value, state] : pendingAssigns.lookup(ret))
        program.addOp("copy", {value}, {state});
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
        FailureOr<int> whole = emitOutput(ret, i, id);
        if (failed(whole))
          return failure();
        program.addOutput(nameAt(fn, TesselDialect::kOutputNamesAttrName, i, "output"), *whole);
      }
      continue;
    }
    if (failed(emitOp(&op)))
      return failure();
    if (auto it = pendingAssigns.find(&op); it != pendingAssigns.end())
      for (auto [value, state] : it->second)
        program.addOp("copy", {value}, {state});
  }
  return success();
}

// Gemini: whether `w` (a parameter or its optimizer state) belongs to a
// chunk that -tessel-gemini-placement keeps in host memory (the module's
// plan), so that its STATE buffer is kept there (Buffer.host).
static bool inHostChunk(WeightOp w) {
  auto chunk = w->getAttrOfType<IntegerAttr>(TesselDialect::kChunkAttrName);
  auto module = w->getParentOfType<ModuleOp>();
  if (!chunk || !module)
    return false;
  auto plan =
      module->getAttrOfType<DictionaryAttr>(TesselDialect::kGeminiPlanAttrName);
  auto placement = plan ? plan.getAs<ArrayAttr>("placement") : ArrayAttr();
  const int64_t c = chunk.getInt();
  if (!placement || c < 0 || c >= static_cast<int64_t>(placement.size()))
    return false;
  auto where = dyn_cast<StringAttr>(placement[c]);
  return where && where.getValue() == "host";
}

// A weight's block for this rank: its global data, cut by `tessel.source_slice`
// (a piece of a fused projection), then by its global spec.
LogicalResult Exporter::emitWeight(WeightOp w) {
  RankedTensorType t = w.getType();
  std::optional<rt::DType> dt = toDType(t.getElementType());
  if (!dt)
    return w.emitOpError() << "weight \"" << w.getName()
                           << "\" has element type " << t.getElementType()
                           << ", which the runtime does not hold";
  // Zero-initialised state (optimizer state): no data in the model. A
  // parameter of a gradient program (emptyStates), filled by the runtime,
  // may be used at several places and be a piece of a fused one.
  if (w.getZeros() || emptyStates.contains(w.getName())) {
    std::string name = weightStorageName(w);
    if (auto it = weightBuffers.find(name); it != weightBuffers.end()) {
      if (w.getZeros())
        return w.emitOpError() << "weight \"" << w.getName()
                               << "\" is defined twice";
      buffers[w] = it->second;
      return success();
    }
    buffers[w] = program.addState(name, *dt, toShape(t), nullptr);
    states.insert(buffers[w]);
    weightBuffers[name] = buffers[w];
    if (inHostChunk(w))
      program.setHostMemory(buffers[w]);
    if (w->hasAttr(kPerRankStateAttrName))
      return success();
    setStateLayout(w, buffers[w],
                   globalShapeOf(mesh,
                                 w->getAttrOfType<TensorShardingAttr>(
                                     TesselDialect::kGlobalShardingAttrName),
                                 t));
    return success();
  }
  // A weight some tessel.assign writes persists across steps: a STATE buffer
  // initialised with the model's data.
  const bool assigned = llvm::any_of(w->getUsers(), [&](Operation *u) {
    auto a = dyn_cast<AssignOp>(u);
    return a && a.getWeight() == w.getResult();
  });
  std::string error;
  FailureOr<WeightData> data = weights(w.getName(), error);
  if (failed(data))
    return w.emitOpError() << "weight \"" << w.getName() << "\": " << error;
  // The data's own type: a half master's data is widened to f32 as it is
  // written.
  rt::DType stored = *dt;
  if (data->elementType)
    if (std::optional<rt::DType> s = toDType(data->elementType))
      stored = *s;
  if (stored != *dt && !(*dt == rt::DType::F32 && rt::isHalf(stored)))
    return w.emitOpError() << "weight \"" << w.getName() << "\" holds "
                           << data->elementType << " data, not "
                           << t.getElementType();
  size_t elem = rt::dtypeSize(stored);
  int64_t count = 1;
  for (int64_t s : data->shape)
    count *= s;
  if (data->size != count * elem)
    return w.emitOpError() << "weight \"" << w.getName() << "\" has "
                           << data->size << " bytes, its shape needs "
                           << count * elem;
  // The view of the data this weight is: a piece of a fused parameter
  // (`tessel.source_slice`), or the whole.
  const SmallVector<int64_t> global(data->shape);
  SmallVector<int64_t> origin(global.size(), 0), shape(global);
  std::string name = mlir::tessel::weightStorageName(w);
  if (auto src = w->getAttrOfType<DenseI64ArrayAttr>(
          TesselDialect::kSourceSliceAttrName)) {
    int64_t d = src[0];
    origin[d] = src[1];
    shape[d] = src[2] - src[1];
  }
  auto spec = w->getAttrOfType<TensorShardingAttr>(
      TesselDialect::kGlobalShardingAttrName);
  // One parameter used at several places (a bias shared between layers) is
  // stored once.
  std::string key = name;
  if (spec)
    llvm::raw_string_ostream(key) << " " << spec;
  if (auto it = weightBuffers.find(key); it != weightBuffers.end()) {
    buffers[w] = it->second;
    return success();
  }
  SmallVector<int64_t> starts, sizes;
  shardBlock(mesh, spec, rank, shape, starts, sizes);
  if (ArrayRef<int64_t>(sizes) != t.getShape())
    return w.emitOpError() << "weight \"" << w.getName()
                           << "\": this rank's block of its data does not have "
                              "the weight's type "
                           << t;
  // The block streams from the model's data when the artifact is written.
  auto source = [data = *data, global, origin, shape, starts, sizes, elem,
                 stored, dt = *dt, wname = w.getName().str()](
                    const rt::ProgramBuilder::ByteSink &sink) {
    return streamBlock(data, global, elem, origin, shape, starts, sizes, wname,
                       stored == dt ? sink : widenedSink(stored, sink));
  };
  if (assigned) {
    buffers[w] = program.addState(name, *dt, toShape(t), source);
  } else {
    // Ranks that hold the same block of a read-only weight share it.
    std::string share = name;
    if (ArrayRef<int64_t>(sizes) != ArrayRef<int64_t>(shape)) {
      llvm::raw_string_ostream os(share);
      os << "@[";
      for (auto [i, st] : llvm::enumerate(starts))
        os << (i ? "," : "") << st << ":" << st + sizes[i];
      os << "]";
    }
    buffers[w] = program.addWeight(name, *dt, toShape(t), source, share);
  }
  if (assigned)
    states.insert(buffers[w]);
  if (assigned && inHostChunk(w))
    program.setHostMemory(buffers[w]);
  weightBuffers[key] = buffers[w];
  if (assigned)
    setStateLayout(w, buffers[w], shape);
  return success();
}

// Where state `id`'s block lies in the whole state of shape `global`, for
// checkpoints that load on another mesh.
void Exporter::setStateLayout(WeightOp w, int id, ArrayRef<int64_t> global) {
  SmallVector<int64_t> starts, sizes;
  shardBlock(mesh, w->getAttrOfType<TensorShardingAttr>(
                       TesselDialect::kGlobalShardingAttrName),
             rank, global, starts, sizes);
  program.setStateLayout(id, rt::Shape(global.begin(), global.end()),
                         ints(starts));
}

// The state buffer that `result` of `op` may be computed into: that of the
// weight a tessel.assign gives `result` to, when no op after `op` reads a
// weight of that name (reads see the value from the start of the step), and
// `result` has no other use. -1 otherwise (the assign then copies at the
// end of the step).
int Exporter::inPlaceState(Operation *op, Value result) {
  if (!result.hasOneUse())
    return -1;
  auto assign = dyn_cast<AssignOp>(*result.getUsers().begin());
  if (!assign || assign.getValue() != result)
    return -1;
  auto weight = assign.getWeight().getDefiningOp<WeightOp>();
  auto it = buffers.find(assign.getWeight());
  if (!weight || it == buffers.end() || !states.contains(it->second))
    return -1;
  Operation *last = lastRead.lookup(weight.getName());
  if (last && last != op && op->isBeforeInBlock(last))
    return -1;
  return it->second;
}

LogicalResult Exporter::emitOp(Operation *op) {
  if (auto w = dyn_cast<WeightOp>(op))
    return emitWeight(w);
  // The weight's new value is copied into its state buffer after every
  // read of the old one: here, or after the op that reads it last (so the
  // value's buffer is free from then on, not kept to the end of the step).
  if (auto a = dyn_cast<AssignOp>(op)) {
    int state = buffers.lookup(a.getWeight());
    int value = buffers.lookup(a.getValue());
    if (value == state) { // computed in place (inPlaceState)
      buffers[a] = value;
      return success();
    }
    Operation *last = op;
    // Readers of the weight, and of a shard_constraint's alias of it.
    std::function<void(Value)> readers = [&](Value v) {
      for (Operation *user : v.getUsers()) {
        Operation *end = readEnd(user);
        if (end->getBlock() == op->getBlock() && last->isBeforeInBlock(end))
          last = end;
        if (auto sc = dyn_cast<ShardConstraintOp>(user))
          readers(sc.getResult());
      }
    };
    readers(a.getWeight());
    if (last == op)
      program.addOp("copy", {value}, {state});
    else
      pendingAssigns[last].emplace_back(value, state);
    buffers[a] = value;
    return success();
  }
  if (auto c = dyn_cast<ConstantOp>(op)) {
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    std::optional<rt::DType> dt = toDType(c.getType().getElementType());
    // The bytes are made here, from a splat too: a budget first, checked
    // before anything is allocated (a splat of 4 TiB aborted tesselc).
    std::optional<uint64_t> need =
        dt ? ::tessel::checkedBytes(
                 ::tessel::checkedProduct(c.getType().getShape()).value_or(-1),
                 rt::dtypeSize(*dt))
           : std::nullopt;
    if (dt && (!need || *need > kMaxConstantBytes)) {
      InFlightDiagnostic diag = c.emitOpError() << "constant " << c.getType()
                                                << " needs ";
      if (need)
        diag << *need;
      else
        diag << "more than 2^63";
      return diag << " bytes; one constant may hold at most "
                  << kMaxConstantBytes << " bytes";
    }
    FailureOr<std::string> bytes =
        dense ? constantBytes(dense) : FailureOr<std::string>(failure());
    if (failed(bytes) || !dt)
      return c.emitOpError() << "has a constant of type " << c.getType()
                             << " that the runtime cannot hold";
    buffers[c] = program.addConstant(*dt, toShape(c.getType()), bytes->data());
    return success();
  }
  // This rank's block of one dim: a static slice in its own program.
  if (auto ls = dyn_cast<LocalSliceOp>(op)) {
    RankedTensorType in = ls.getInput().getType(), out = ls.getType();
    int64_t d = ls.getDim();
    int64_t index = mesh.indexAlong(axisNames(ls.getAxes()), rank).first;
    SmallVector<int64_t> starts(in.getRank(), 0), ends(in.getShape()),
        steps(in.getRank(), 1);
    starts[d] = index * out.getDimSize(d);
    ends[d] = starts[d] + out.getDimSize(d);
    if (ends[d] > in.getDimSize(d))
      return ls.emitOpError() << "rank " << rank << "'s block [" << starts[d]
                              << ", " << ends[d] << ") of dim " << d
                              << " runs past its size " << in.getDimSize(d);
    FailureOr<int> id = newBuffer(op, ls.getResult());
    if (failed(id))
      return failure();
    program.addOp("slice", {buffers.lookup(ls.getInput())}, {*id},
                  rt::Attrs().is("starts", ints(starts)).is("ends", ints(ends)).is(
                      "steps", ints(steps)));
    return success();
  }
  // A pinned spec changes nothing on one device.
  if (auto sc = dyn_cast<ShardConstraintOp>(op)) {
    buffers[sc] = buffers.lookup(sc.getInput());
    return success();
  }
  // Results first: newBuffer refuses element types the runtime does not hold,
  // which the encoders (a cast's target type) rely on.
  if (op->getDialect() != op->getContext()->getLoadedDialect<TesselDialect>())
    return op->emitOpError() << "has no runtime instruction";
  std::vector<int> operands, results;
  for (Value v : op->getOperands())
    operands.push_back(buffers.lookup(v));
  // A gradient bucket's all_reduce runs in place on the bucket it alone
  // reads (the concatenated gradients): one flat buffer per bucket.
  const bool bucket =
      isa<AllReduceOp>(op) && op->hasAttr(TesselDialect::kBucketAttrName);
  if (bucket && op->getOperand(0).hasOneUse() &&
      computed.contains(operands[0])) {
    buffers[op->getResult(0)] = operands[0];
    results.push_back(operands[0]);
  } else {
    for (Value v : op->getResults()) {
      // An optimizer update writes straight into the state it is assigned
      // to.
      if (isa<AdamUpdateOp, SgdUpdateOp>(op))
        if (int state = inPlaceState(op, v); state >= 0) {
          buffers[v] = state;
          results.push_back(state);
          continue;
        }
      FailureOr<int> id = newBuffer(op, v);
      if (failed(id))
        return failure();
      results.push_back(*id);
    }
  }
  InstructionEncoding enc;
  if (!encodeInstruction(op, *this, enc))
    return op->emitOpError() << "has no runtime instruction";
  // A plugin's op: its own attributes go beside `target`.
  if (auto call = dyn_cast<CustomCallOp>(op))
    encodeCustomCallAttrs(call, enc.attrs);
  std::string name;
  if (auto loc = dyn_cast<NameLoc>(op->getLoc())) {
    name = loc.getName().str();
  } else if (auto fused = dyn_cast<FusedLoc>(op->getLoc())) {
    // A fused op (attention, an elementwise chain): its ops' ONNX nodes.
    llvm::SmallSetVector<StringRef, 4> names;
    for (Location l : fused.getLocations())
      if (auto n = dyn_cast<NameLoc>(l))
        names.insert(n.getName().getValue());
    name = llvm::join(names, ", ");
  }
  program.addOp(enc.name, operands, results, enc.attrs, name);
  if (auto phase = op->getAttrOfType<StringAttr>(kPhaseAttr);
      phase && pipelined)
    program.setAction(phase.str(),
                          int(getPipelineInt(op, kStageAttr, 0)),
                          int(getPipelineInt(op, kMicrobatchAttr, -1)));
  // A gradient bucket's all_reduce, a prefetched parameter's all_gather and
  // a gradient's asynchronous reduce_scatter run until their wait, which
  // names both buffers: neither is reused before it.
  if (bucket || (isa<AllGatherOp, ReduceScatterOp>(op) &&
                 op->hasAttr(TesselDialect::kAsyncAttrName)))
    inFlight[op->getResult(0)] = {operands[0], results[0]};
  return success();
}

} // namespace

std::string mlir::tessel::weightStorageName(Operation *op) {
  auto w = cast<WeightOp>(op);
  std::string name = w.getName().str();
  // A piece of a fused parameter; its name says which.
  if (auto src = w->getAttrOfType<DenseI64ArrayAttr>(
          TesselDialect::kSourceSliceAttrName))
    name += "[dim " + std::to_string(src[0]) + ": " + std::to_string(src[1]) +
            ".." + std::to_string(src[2]) + "]";
  return name;
}

LogicalResult mlir::tessel::exportArtifact(ModuleOp module,
                                           const WeightLookup &weights,
                                           StringRef path,
                                           const ExportOptions &options) {
  func::FuncOp entry;
  // A pipelined step: one function per coordinate of the pp axis.
  llvm::DenseMap<int64_t, func::FuncOp> ppFunctions;
  for (auto fn : module.getOps<func::FuncOp>())
    if (auto r = fn->getAttrOfType<IntegerAttr>(kPpRankAttr))
      ppFunctions[r.getInt()] = fn;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal() || fn.isPrivate())
      continue;
    if (!ppFunctions.empty()) {
      if (!entry && fn->hasAttr(kPpRankAttr))
        entry = fn;
      continue;
    }
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

  auto meshes = llvm::to_vector(module.getOps<MeshOp>());
  if (meshes.size() > 1)
    return meshes[1].emitOpError()
           << "is a second mesh; an artifact runs on one mesh";
  MeshLayout mesh = meshes.empty() ? MeshLayout() : MeshLayout(meshes[0]);
  rt::ArtifactBuilder builder(options.producer);
  builder.setMesh(mesh.axes());
  llvm::StringSet<> emptyStates;
  if (options.gradientWeightsAsStates)
    if (auto names = entry->getAttrOfType<ArrayAttr>(
            TesselDialect::kGradientsAttrName))
      for (Attribute n : names)
        emptyStates.insert(cast<StringAttr>(n).getValue());
  if (options.trainableWeightsAsStates)
    if (auto names = module->getAttrOfType<ArrayAttr>(
            TesselDialect::kTrainableAttrName))
      for (Attribute n : names)
        emptyStates.insert(cast<StringAttr>(n).getValue());
  for (int64_t r = 0; r < mesh.numRanks(); ++r) {
    Exporter exporter(builder.rank(r), weights, mesh, r);
    exporter.emptyStates = emptyStates;
    func::FuncOp fn = entry;
    if (!ppFunctions.empty()) {
      StringRef ppAxis = kPipelineAxis;
      int64_t pp = mesh.indexAlong(ppAxis, r).first;
      fn = ppFunctions.lookup(pp);
      if (!fn)
        return module.emitError() << "no function for pp rank " << pp
                                  << " (tessel.pp_rank)";
      exporter.pipelined = true;
    }
    if (failed(exporter.run(fn)))
      return failure();
  }
  recordPlugins(module, builder);
  rt::Status status = builder.write(path.str());
  if (!status) {
    // Name the artifact, not the temporary directory it is written into.
    std::string message = status.message(), shown = path.str();
    if (!options.displayPath.empty()) {
      shown = options.displayPath;
      for (size_t at; (at = message.find(path.str())) != std::string::npos;)
        message.replace(at, path.size(), shown);
    }
    return module.emitError() << "cannot write the artifact " << shown << ": "
                              << message;
  }
  return success();
}
