//===- Program.cpp - Validating a per-rank program ------------------------===//
//
// Everything an artifact says is checked here, once, at load time: buffer
// ids, dtypes, shapes, arena bounds, weight and state bindings, inputs and
// outputs; each instruction is read here and checked by ProgramVerifier.cpp
// (operand and result counts, dtypes, shapes, attributes, aliasing).
// Backends may then execute without checks; a corrupted artifact gives an
// error, never a crash.
//
//===----------------------------------------------------------------------===//
#include "tessel/runtime/Program.h"

#include "ProgramVerifier.h"
#include "artifact.pb.h"
#include "tessel/runtime/Artifact.h"
#include "tessel/runtime/MappedFile.h"
#include "tessel/support/Checked.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>
#include <unistd.h>

namespace tessel::runtime {

namespace {

/// Instruction.action, read through protobuf's reflection: the generated
/// accessors reference the generated descriptors, and this file is linked
/// into the CUDA plugin too (libtessel-cuda.so), which must not register a
/// second copy of them in the process (protobuf aborts on that).
void readAction(const google::protobuf::Message &inst, PipelineAction &out) {
  const google::protobuf::Descriptor *d = inst.GetDescriptor();
  const google::protobuf::Reflection *r = inst.GetReflection();
  const google::protobuf::FieldDescriptor *f = d->FindFieldByName("action");
  if (!f || !r->HasField(inst, f))
    return;
  const google::protobuf::Message &a = r->GetMessage(inst, f);
  const google::protobuf::Descriptor *ad = a.GetDescriptor();
  const google::protobuf::Reflection *ar = a.GetReflection();
  const auto *phase = ad->FindFieldByName("phase");
  const auto *stage = ad->FindFieldByName("stage");
  const auto *mb = ad->FindFieldByName("microbatch");
  if (!phase || !stage || !mb)
    return;
  out.phase = ar->GetString(a, phase);
  out.stage = ar->GetInt32(a, stage);
  out.microbatch = ar->GetInt32(a, mb);
}

} // namespace

std::string PipelineAction::label() const {
  if (phase.empty())
    return "";
  std::string s = phase + " " + std::to_string(stage);
  if (microbatch >= 0)
    s += "." + std::to_string(microbatch);
  return s;
}

float Op::floatAttr(const std::string &name, float dflt) const {
  auto it = attrs.find(name);
  if (it == attrs.end())
    return dflt;
  const AttrValue &a = it->second;
  if (a.kind == AttrValue::Kind::Floats && a.floats.size() == 1)
    return a.floats[0];
  if (a.kind == AttrValue::Kind::Ints && a.ints.size() == 1)
    return static_cast<float>(a.ints[0]);
  return dflt;
}

int64_t Op::intAttr(const std::string &name, int64_t dflt) const {
  auto it = attrs.find(name);
  if (it == attrs.end() || it->second.kind != AttrValue::Kind::Ints ||
      it->second.ints.size() != 1)
    return dflt;
  return it->second.ints[0];
}

std::string
Program::namesOf(const std::vector<std::pair<std::string, int>> &bindings) {
  std::string known;
  for (const auto &[n, b] : bindings)
    known += (known.empty() ? "" : ", ") + n;
  return known.empty() ? "none" : known;
}

int Program::findInput(const std::string &name) const {
  for (auto &[n, id] : inputs)
    if (n == name)
      return id;
  return -1;
}

int Program::findOutput(const std::string &name) const {
  for (auto &[n, id] : outputs)
    if (n == name)
      return id;
  return -1;
}

int Program::findState(const std::string &name) const {
  for (auto &[n, id] : states)
    if (n == name)
      return id;
  return -1;
}

uint64_t physicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || pageSize <= 0)
    return 0;
  return checkedMul(uint64_t(pages), uint64_t(pageSize)).value_or(UINT64_MAX);
}

namespace {

constexpr size_t kMaxRank = 16;

using FailFn = std::function<Status(const std::string &)>;

/// Reads buffer `i` of `proto` into p.buffers[i]; counts a constant's
/// aligned bytes into `constBytes`.
Status readBuffer(const artifact::Program &proto, int i, Program &p,
                  std::set<std::string> &stateNames, size_t &constBytes,
                  const FailFn &fail) {
  const artifact::Buffer &b = proto.buffers(i);
  BufferInfo &info = p.buffers[i];
  std::string bw = "buffer " + std::to_string(i) +
                   (b.name().empty() ? "" : " '" + b.name() + "'");
  if (b.id() != i)
    return fail(bw + ": id is " + std::to_string(b.id()) +
                ", must equal its index");
  if (!isValidDType(b.dtype()))
    return fail(bw + ": invalid dtype " + std::to_string(b.dtype()));
  if (static_cast<size_t>(b.shape_size()) > kMaxRank)
    return fail(bw + ": rank " + std::to_string(b.shape_size()) + " exceeds " +
                std::to_string(kMaxRank));
  info.id = i;
  info.dtype = static_cast<DType>(b.dtype());
  info.shape.assign(b.shape().begin(), b.shape().end());
  info.numel = numElements(info.shape);
  info.name = b.name();
  std::optional<uint64_t> bytes = byteSize(info.dtype, info.shape);
  if (info.numel < 0 || !bytes)
    return fail(bw + ": invalid shape " + shapeToString(info.shape) +
                " (a negative dim, or more than 2^62 bytes of " +
                dtypeName(info.dtype) + ")");
  info.bytes = *bytes;
  if (b.host() && b.kind() != artifact::Buffer::STATE)
    return fail(bw + ": only a STATE buffer can be kept in host memory "
                     "(Buffer.host)");
  switch (b.kind()) {
  case artifact::Buffer::ARENA:
    info.kind = BufferInfo::Kind::Arena;
    info.offset = b.offset();
    if (info.offset % dtypeSize(info.dtype))
      return fail(bw + ": offset " + std::to_string(info.offset) +
                  " is not aligned to its element size");
    if (!rangeInside(info.offset, info.bytes, p.arenaSize))
      return fail(bw + ": offset " + std::to_string(info.offset) +
                  " and length " + std::to_string(info.bytes) +
                  " lie outside the arena of " + std::to_string(p.arenaSize) +
                  " bytes");
    break;
  case artifact::Buffer::WEIGHT:
    info.kind = BufferInfo::Kind::Weight;
    break;
  case artifact::Buffer::STATE:
    // Its storage is the executor's; its initial value a Weight entry's
    // bytes (bound below) or zeros.
    info.kind = BufferInfo::Kind::State;
    if (info.name.empty())
      return fail(bw + ": a STATE buffer needs a name (its key)");
    if (!stateNames.insert(info.name).second)
      return fail(bw + ": another STATE buffer is named '" + info.name + "'");
    p.states.emplace_back(info.name, i);
    info.host = b.host();
    if (b.global_shape_size() == 0 && b.global_offset_size() == 0) {
      // No layout recorded; a scalar is whole wherever it is.
      info.globalShape = info.shape;
      info.globalOffset.assign(info.shape.size(), 0);
      info.hasLayout = info.shape.empty();
      break;
    }
    info.hasLayout = true;
    info.globalShape.assign(b.global_shape().begin(), b.global_shape().end());
    info.globalOffset.assign(b.global_offset().begin(),
                             b.global_offset().end());
    if (info.globalShape.size() != info.shape.size() ||
        info.globalOffset.size() != info.shape.size())
      return fail(bw + ": STATE '" + info.name + "' has a global shape of " +
                  std::to_string(info.globalShape.size()) + " dims and " +
                  std::to_string(info.globalOffset.size()) +
                  " offsets for a block of " +
                  std::to_string(info.shape.size()) + " dims");
    for (size_t d = 0; d < info.shape.size(); ++d)
      if (info.globalShape[d] < 0 || info.globalOffset[d] < 0 ||
          info.globalOffset[d] > info.globalShape[d] ||
          info.globalShape[d] > (int64_t(1) << 48))
        return fail(bw + ": STATE '" + info.name + "': block at " +
                    shapeToString(info.globalOffset) + " of global shape " +
                    shapeToString(info.globalShape) + " is out of range");
    break;
  case artifact::Buffer::CONSTANT:
    info.kind = BufferInfo::Kind::Constant;
    if (b.data().size() != info.bytes)
      return fail(bw + ": constant holds " + std::to_string(b.data().size()) +
                  " bytes, " + dtypeName(info.dtype) + " " +
                  shapeToString(info.shape) + " needs " +
                  std::to_string(info.bytes));
    constBytes += (info.bytes + 63) / 64 * 64;
    break;
  default:
    return fail(bw + ": invalid kind " + std::to_string(b.kind()));
  }
  return Status::ok();
}

/// Copies the constants into one aligned block, which the program keeps
/// (nullptr: no constants).
std::shared_ptr<OwnedBytes> bindConstants(const artifact::Program &proto,
                                          size_t constBytes, Program &p) {
  if (!constBytes)
    return nullptr;
  auto block = std::make_shared<OwnedBytes>(constBytes);
  size_t off = 0;
  for (int i = 0; i < proto.buffers_size(); ++i) {
    BufferInfo &info = p.buffers[i];
    if (info.kind != BufferInfo::Kind::Constant)
      continue;
    std::memcpy(block->data() + off, proto.buffers(i).data().data(),
                info.bytes);
    info.data = block->data() + off;
    off += (info.bytes + 63) / 64 * 64;
  }
  return block;
}

/// Binds each weight entry's bytes to its WEIGHT or STATE buffer.
Status bindWeights(const artifact::Program &proto,
                   const std::vector<const void *> &weightData,
                   const std::vector<bool> *fileBacked, Program &p,
                   const FailFn &fail) {
  const int nb = proto.buffers_size();
  if (static_cast<size_t>(proto.weights_size()) != weightData.size() ||
      (fileBacked && fileBacked->size() != weightData.size()))
    return fail("internal: weight data count mismatch");
  for (int i = 0; i < proto.weights_size(); ++i) {
    const artifact::Weight &w = proto.weights(i);
    if (w.buffer() < 0 || w.buffer() >= nb)
      return fail("weight '" + w.name() + "': buffer " +
                  std::to_string(w.buffer()) + " does not exist");
    BufferInfo &info = p.buffers[w.buffer()];
    if (info.kind != BufferInfo::Kind::Weight &&
        info.kind != BufferInfo::Kind::State)
      return fail("weight '" + w.name() + "': buffer " +
                  std::to_string(w.buffer()) +
                  " is not of kind WEIGHT or STATE");
    if (info.kind == BufferInfo::Kind::State && w.name() != info.name)
      return fail("weight '" + w.name() + "': initialises STATE buffer " +
                  std::to_string(w.buffer()) + " '" + info.name +
                  "', whose weight entry must bear its name");
    if (info.data)
      return fail("weight '" + w.name() + "': buffer " +
                  std::to_string(w.buffer()) + " is bound twice");
    info.data = weightData[i];
    info.fileBacked = fileBacked && (*fileBacked)[i];
  }
  for (const BufferInfo &info : p.buffers)
    if (info.kind == BufferInfo::Kind::Weight && !info.data && info.bytes)
      return fail("buffer " + std::to_string(info.id) + " '" + info.name +
                  "' is a WEIGHT that no weight entry binds");
  return Status::ok();
}

/// The program's inputs (ARENA buffers) and outputs, each named once.
Status readBindings(const artifact::Program &proto, Program &p,
                    const FailFn &fail) {
  const int nb = proto.buffers_size();
  std::set<std::string> names;
  for (int i = 0; i < proto.inputs_size(); ++i) {
    const artifact::Binding &b = proto.inputs(i);
    if (b.buffer() < 0 || b.buffer() >= nb)
      return fail("input '" + b.name() + "': buffer " +
                  std::to_string(b.buffer()) + " does not exist");
    if (p.buffers[b.buffer()].kind != BufferInfo::Kind::Arena)
      return fail("input '" + b.name() + "' is not an ARENA buffer");
    if (!names.insert(b.name()).second)
      return fail("input '" + b.name() + "' is declared twice");
    p.inputs.emplace_back(b.name(), b.buffer());
  }
  names.clear();
  for (int i = 0; i < proto.outputs_size(); ++i) {
    const artifact::Binding &b = proto.outputs(i);
    if (b.buffer() < 0 || b.buffer() >= nb)
      return fail("output '" + b.name() + "': buffer " +
                  std::to_string(b.buffer()) + " does not exist");
    if (!names.insert(b.name()).second)
      return fail("output '" + b.name() + "' is declared twice");
    p.outputs.emplace_back(b.name(), b.buffer());
  }
  return Status::ok();
}

/// Reads instruction `i` into p.ops[i] and checks it (ProgramVerifier.h).
Status readInstruction(const artifact::Program &proto, int i, Program &p,
                       const std::string &what, const FailFn &fail) {
  const int nb = proto.buffers_size();
  const artifact::Instruction &inst = proto.instructions(i);
  Op &op = p.ops[i];
  auto kind = opKindFromInt(inst.op());
  std::string where = "instruction " + std::to_string(i);
  if (!kind)
    return fail(where + ": unknown op kind " + std::to_string(inst.op()));
  op.kind = *kind;
  op.name = inst.name();
  for (const auto &[key, value] : inst.attrs()) {
    AttrValue &a = op.attrs[key];
    switch (value.value_case()) {
    case artifact::Attribute::kInts:
      a.kind = AttrValue::Kind::Ints;
      a.ints.assign(value.ints().values().begin(), value.ints().values().end());
      break;
    case artifact::Attribute::kFloats:
      a.kind = AttrValue::Kind::Floats;
      a.floats.assign(value.floats().values().begin(),
                      value.floats().values().end());
      break;
    default:
      a.kind = AttrValue::Kind::Str;
      a.str = value.str();
      break;
    }
  }
  where += " (" + std::string(opKindName(op.kind)) +
           (op.name.empty() ? "" : " '" + op.name + "'") + ")";
  PipelineAction action;
  readAction(inst, action);
  if (!action.empty()) {
    static const char *const phases[] = {"F",    "B",    "W",   "BW",
                                         "STEP", "SEND", "RECV"};
    if (std::find(std::begin(phases), std::end(phases), action.phase) ==
        std::end(phases))
      return fail(where + ": pipeline action phase '" + action.phase +
                  "' is not one of F, B, W, BW, STEP, SEND, RECV");
    if (action.stage < 0 || action.microbatch < -1)
      return fail(where + ": pipeline action " + action.phase + " has stage " +
                  std::to_string(action.stage) + " and microbatch " +
                  std::to_string(action.microbatch) +
                  " (want stage >= 0, microbatch >= -1)");
    op.action = std::move(action);
    p.pipelined = true;
  }
  for (int id : inst.operands()) {
    if (id < 0 || id >= nb)
      return fail(where + ": operand buffer " + std::to_string(id) +
                  " does not exist");
    op.operands.push_back(id);
  }
  for (int id : inst.results()) {
    if (id < 0 || id >= nb)
      return fail(where + ": result buffer " + std::to_string(id) +
                  " does not exist");
    if (p.buffers[id].isReadOnly())
      return fail(where + ": result buffer " + std::to_string(id) +
                  " is read-only (not an ARENA or STATE buffer)");
    op.results.push_back(id);
  }
  if (op.operands.size() > (1u << 20) || op.results.size() > (1u << 20))
    return fail(where + ": too many operands or results");
  if (op.results.empty() && op.kind != OpKind::Send && op.kind != OpKind::Wait)
    return fail(where + ": has no result");
  TSL_RETURN_IF_ERROR(
      verifier::checkInstruction(inst, p, op, where).withContext(what));
  return verifier::checkAliasing(p, op, where).withContext(what);
}

} // namespace

Status Program::create(const artifact::Program &proto,
                       const std::vector<const void *> &weightData,
                       std::vector<std::shared_ptr<Storage>> keepAlive,
                       const std::string &what,
                       std::shared_ptr<const Program> &out,
                       const std::vector<bool> *fileBacked) {
  FailFn fail = [&](const std::string &m) {
    return Status::error(what + ": " + m);
  };
  if (proto.format_version() != kFormatVersion)
    return fail("unsupported program format_version " +
                std::to_string(proto.format_version()) +
                " (this runtime reads " + std::to_string(kFormatVersion) + ")");
  auto p = std::make_shared<Program>();
  p->rank = proto.rank();
  p->arenaSize = proto.arena_size();
  p->storage = std::move(keepAlive);
  if (p->arenaSize > kMaxArenaBytes)
    return fail("the program's arena needs " + std::to_string(p->arenaSize) +
                " bytes, more than the " + std::to_string(kMaxArenaBytes) +
                " (64 TiB) a program may use; this machine has " +
                std::to_string(physicalMemoryBytes()) + " bytes of memory");

  p->buffers.resize(proto.buffers_size());
  size_t constBytes = 0;
  std::set<std::string> stateNames;
  for (int i = 0; i < proto.buffers_size(); ++i)
    TSL_RETURN_IF_ERROR(readBuffer(proto, i, *p, stateNames, constBytes, fail));
  if (auto block = bindConstants(proto, constBytes, *p))
    p->storage.push_back(std::move(block));
  TSL_RETURN_IF_ERROR(bindWeights(proto, weightData, fileBacked, *p, fail));
  TSL_RETURN_IF_ERROR(readBindings(proto, *p, fail));
  p->ops.resize(proto.instructions_size());
  for (int i = 0; i < proto.instructions_size(); ++i)
    TSL_RETURN_IF_ERROR(readInstruction(proto, i, *p, what, fail));
  out = std::move(p);
  return Status::ok();
}

} // namespace tessel::runtime
