//===- ArtifactBuilder.cpp - Writing artifacts programmatically -----------===//
#include "tessel/runtime/ArtifactBuilder.h"

#include "tessel/runtime/MappedFile.h"
#include "tessel/runtime/Safetensors.h"
#include "artifact.pb.h"
#include "tessel/runtime/Artifact.h"
#include "tessel/runtime/BufferPlanner.h"
#include "tessel/runtime/OpKind.h"
#include "tessel/support/Checked.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <unistd.h>
#include <sys/stat.h>

namespace tessel::runtime {

namespace {

/// Marks a buffer whose offset planMemory() must choose.
constexpr uint64_t kUnplanned = ~uint64_t(0);

uint64_t bufferBytes(const artifact::Buffer &b) {
  // 0 for a size that overflows: write() refuses such a buffer.
  return byteSize(static_cast<DType>(b.dtype()),
                  Shape(b.shape().begin(), b.shape().end()))
      .value_or(0);
}

Status writeFile(const std::string &path, const std::string &bytes) {
  std::string tmp = path + ".tmp";
  TSL_RETURN_IF_ERROR(writeBytes(tmp, bytes));
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return Status::error(path + ": rename failed: " + std::strerror(errno));
  return Status::ok();
}

} // namespace

ProgramBuilder::ProgramBuilder()
    : prog(std::make_unique<artifact::Program>()) {
  prog->set_format_version(kFormatVersion);
}
ProgramBuilder::~ProgramBuilder() = default;
ProgramBuilder::ProgramBuilder(ProgramBuilder &&) noexcept = default;

int ProgramBuilder::addBuffer(DType dtype, Shape shape, std::string name,
                              int64_t offset) {
  artifact::Buffer *b = prog->add_buffers();
  b->set_id(prog->buffers_size() - 1);
  b->set_dtype(static_cast<artifact::DType>(dtype));
  for (int64_t d : shape)
    b->add_shape(d);
  b->set_kind(artifact::Buffer::ARENA);
  b->set_offset(offset < 0 ? kUnplanned : static_cast<uint64_t>(offset));
  b->set_name(std::move(name));
  return b->id();
}

int ProgramBuilder::addInput(const std::string &name, DType dtype,
                             Shape shape) {
  int id = addBuffer(dtype, std::move(shape), name);
  artifact::Binding *bind = prog->add_inputs();
  bind->set_name(name);
  bind->set_buffer(id);
  return id;
}

void ProgramBuilder::addOutput(const std::string &name, int buffer) {
  artifact::Binding *bind = prog->add_outputs();
  bind->set_name(name);
  bind->set_buffer(buffer);
}

int ProgramBuilder::addWeight(const std::string &name, DType dtype,
                              Shape shape, const void *data) {
  uint64_t size = byteSize(dtype, shape).value_or(0);
  auto bytes = std::make_shared<std::string>(static_cast<const char *>(data),
                                             size);
  return addWeight(name, dtype, std::move(shape),
                   [bytes](const ByteSink &sink) {
                     return sink(bytes->data(), bytes->size());
                   });
}

int ProgramBuilder::addWeight(const std::string &name, DType dtype,
                              Shape shape, WeightSource source,
                              std::string shareKey) {
  int id = addBuffer(dtype, shape, name);
  artifact::Buffer *b = prog->mutable_buffers(id);
  b->set_kind(artifact::Buffer::WEIGHT);
  b->set_offset(0);
  artifact::Weight *w = prog->add_weights();
  w->set_name(name);
  w->set_buffer(id);
  w->set_file(0);
  weightEntries.push_back({name, dtype, std::move(shape), std::move(source),
                           std::move(shareKey), prog->weights_size() - 1});
  return id;
}

int ProgramBuilder::addState(const std::string &name, DType dtype,
                             Shape shape, const void *init) {
  int id = init ? addWeight(name, dtype, std::move(shape), init)
                : addBuffer(dtype, std::move(shape), name);
  artifact::Buffer *b = prog->mutable_buffers(id);
  b->set_kind(artifact::Buffer::STATE);
  b->set_offset(0);
  return id;
}

int ProgramBuilder::addState(const std::string &name, DType dtype,
                             Shape shape, WeightSource init) {
  int id = addWeight(name, dtype, std::move(shape), std::move(init));
  artifact::Buffer *b = prog->mutable_buffers(id);
  b->set_kind(artifact::Buffer::STATE);
  b->set_offset(0);
  return id;
}

void ProgramBuilder::setStateLayout(int buffer, const Shape &globalShape,
                                    const std::vector<int64_t> &offset) {
  artifact::Buffer *b = prog->mutable_buffers(buffer);
  b->clear_global_shape();
  b->clear_global_offset();
  for (int64_t d : globalShape)
    b->add_global_shape(d);
  for (int64_t o : offset)
    b->add_global_offset(o);
}

void ProgramBuilder::setHostMemory(int buffer) {
  prog->mutable_buffers(buffer)->set_host(true);
}

int ProgramBuilder::addConstant(DType dtype, Shape shape, const void *data,
                                std::string name) {
  int id = addBuffer(dtype, std::move(shape), std::move(name));
  artifact::Buffer *b = prog->mutable_buffers(id);
  b->set_kind(artifact::Buffer::CONSTANT);
  b->set_offset(0);
  b->set_data(std::string(static_cast<const char *>(data), bufferBytes(*b)));
  return id;
}

void ProgramBuilder::setAction(const std::string &phase, int stage,
                               int microbatch) {
  int n = prog->instructions_size();
  if (n == 0)
    return;
  artifact::PipelineAction *a =
      prog->mutable_instructions(n - 1)->mutable_action();
  a->set_phase(phase);
  a->set_stage(stage);
  a->set_microbatch(microbatch);
}

void ProgramBuilder::addOp(const std::string &op, std::vector<int> operands,
                           std::vector<int> results, Attrs attrs,
                           std::string name) {
  artifact::Instruction *inst = prog->add_instructions();
  auto kind = parseOpKind(op);
  if (!kind)
    badOps.push_back(op);
  inst->set_op(kind ? static_cast<artifact::OpKind>(*kind)
                    : artifact::OP_UNSPECIFIED);
  for (int o : operands)
    inst->add_operands(o);
  for (int r : results)
    inst->add_results(r);
  for (auto &[k, v] : attrs.values) {
    artifact::Attribute &a = (*inst->mutable_attrs())[k];
    // mutable_*() first, so that an empty list still sets the oneof.
    if (auto *iv = std::get_if<std::vector<int64_t>>(&v)) {
      artifact::IntList *l = a.mutable_ints();
      for (int64_t x : *iv)
        l->add_values(x);
    } else if (auto *fv = std::get_if<std::vector<float>>(&v)) {
      artifact::FloatList *l = a.mutable_floats();
      for (float x : *fv)
        l->add_values(x);
    } else
      a.set_str(std::get<std::string>(v));
  }
  inst->set_name(std::move(name));
}

void ProgramBuilder::planMemory() {
  int nb = prog->buffers_size();
  int64_t n = prog->instructions_size();
  // Fixed buffers keep their offsets; planned ones go above them.
  uint64_t base = 0;
  std::vector<int> todo;
  for (int i = 0; i < nb; ++i) {
    const artifact::Buffer &b = prog->buffers(i);
    if (b.kind() != artifact::Buffer::ARENA)
      continue;
    if (b.offset() == kUnplanned)
      todo.push_back(i);
    else
      base = std::max(base, b.offset() + bufferBytes(b));
  }
  base = (base + 63) / 64 * 64;
  std::vector<int64_t> first(nb, INT64_MAX), last(nb, INT64_MIN);
  // Inputs are bound once and must survive every run of the program (a
  // --repeat reruns it on the same bindings): live from before the first
  // instruction to after the last.
  for (const auto &in : prog->inputs())
    if (in.buffer() >= 0 && in.buffer() < nb) {
      first[in.buffer()] = -1;
      last[in.buffer()] = n;
    }
  for (int64_t i = 0; i < n; ++i) {
    const artifact::Instruction &inst = prog->instructions(i);
    for (int id : inst.operands())
      if (id >= 0 && id < nb) {
        first[id] = std::min(first[id], i);
        last[id] = std::max(last[id], i);
      }
    for (int id : inst.results())
      if (id >= 0 && id < nb) {
        first[id] = std::min(first[id], i);
        last[id] = std::max(last[id], i);
      }
  }
  for (const auto &o : prog->outputs())
    if (o.buffer() >= 0 && o.buffer() < nb)
      last[o.buffer()] = n;
  // A reshape whose operand dies there writes into the operand's bytes: the
  // two share one slot (both backends skip a copy onto itself), so a
  // reshape costs neither a copy nor memory. A slice of a 1-D buffer by
  // step 1 (contiguousSliceOffset; a gradient sliced out of its all-reduced
  // bucket; 1-D: the CPU backend keeps no other layout of such a buffer,
  // which its slice would reorder into the operand's bytes) is a view: it lives
  // inside the operand's slot at its offset (both backends skip the copy),
  // and the slot lives as long as any view of it. Only when nothing writes
  // the operand from the slice on (the view would change) nor the result
  // again, and the view's offset keeps the arena's 64-byte alignment:
  // nothing overwrites a view's bytes while it lives.
  // `root` maps a buffer to the first of its chain, `inRoot` gives its
  // byte offset in the root's.
  std::vector<int> root(nb);
  std::vector<uint64_t> inRoot(nb, 0);
  for (int i = 0; i < nb; ++i)
    root[i] = i;
  std::vector<bool> planned(nb, false);
  for (int id : todo)
    planned[id] = true;
  std::vector<int64_t> lastWrite(nb, INT64_MIN), writes(nb, 0);
  for (int64_t i = 0; i < n; ++i)
    for (int id : prog->instructions(i).results())
      if (id >= 0 && id < nb) {
        lastWrite[id] = i;
        ++writes[id];
      }
  // The last write into any buffer of each chain (by its first buffer),
  // and whether the chain has a view: a buffer written again after it
  // joins joins no chain with a view, and no view is taken of a chain
  // written again after the slice.
  std::vector<int64_t> chainWrite(lastWrite);
  std::vector<bool> viewed(nb, false);
  auto intsAttr = [](const artifact::Instruction &inst, const char *name) {
    std::vector<int64_t> v;
    auto it = inst.attrs().find(name);
    if (it != inst.attrs().end() && it->second.has_ints())
      v.assign(it->second.ints().values().begin(),
               it->second.ints().values().end());
    return v;
  };
  for (int64_t i = 0; i < n; ++i) {
    const artifact::Instruction &inst = prog->instructions(i);
    const bool reshape = inst.op() == artifact::RESHAPE,
               slice = inst.op() == artifact::SLICE;
    if ((!reshape && !slice) || inst.operands_size() != 1 ||
        inst.results_size() != 1)
      continue;
    int x = inst.operands(0), y = inst.results(0);
    if (x < 0 || x >= nb || y < 0 || y >= nb || x == y || !planned[x] ||
        !planned[y] || first[y] != i)
      continue;
    const artifact::Buffer &bx = prog->buffers(x), &by = prog->buffers(y);
    if (reshape) {
      if (last[x] != i || bufferBytes(bx) != bufferBytes(by) ||
          (viewed[root[x]] && writes[y] != 1))
        continue;
      root[y] = root[x];
      inRoot[y] = inRoot[x];
      chainWrite[root[y]] = std::max(chainWrite[root[y]], lastWrite[y]);
      continue;
    }
    if (bx.dtype() != by.dtype() || bx.shape_size() != 1 ||
        chainWrite[root[x]] >= i || writes[y] != 1)
      continue;
    int64_t at = contiguousSliceOffset(
        std::vector<int64_t>(bx.shape().begin(), bx.shape().end()),
        intsAttr(inst, "starts"), intsAttr(inst, "steps"),
        std::vector<int64_t>(by.shape().begin(), by.shape().end()));
    if (at < 0)
      continue;
    uint64_t offset =
        inRoot[x] + static_cast<uint64_t>(at) *
                        dtypeSize(static_cast<DType>(bx.dtype()));
    if (offset % 64 != 0)
      continue;
    root[y] = root[x];
    inRoot[y] = offset;
    viewed[root[y]] = true;
  }
  // One lifetime per chain, the size of its first buffer: from the first
  // use of any of its buffers to the last.
  std::vector<int> slot(nb, -1);
  std::vector<BufferLifetime> lifetimes;
  for (int id : todo) {
    int r = root[id];
    int64_t f = first[id] == INT64_MAX ? -1 : first[id];
    int64_t l = last[id] == INT64_MIN ? f : std::max(last[id], f);
    if (slot[r] < 0) {
      slot[r] = static_cast<int>(lifetimes.size());
      BufferLifetime b;
      b.size = bufferBytes(prog->buffers(r));
      b.firstUse = f;
      b.lastUse = l;
      lifetimes.push_back(b);
      continue;
    }
    BufferLifetime &b = lifetimes[slot[r]];
    b.firstUse = std::min(b.firstUse, f);
    b.lastUse = std::max(b.lastUse, l);
  }
  BufferPlan plan = planBuffers(lifetimes, 64);
  for (int id : todo)
    prog->mutable_buffers(id)->set_offset(base + plan.offsets[slot[root[id]]] +
                                          inRoot[id]);
  prog->set_arena_size(std::max<uint64_t>(
      checkedAdd(base, plan.arenaSize).value_or(kNoArena),
      std::max<uint64_t>(prog->arena_size(), base)));
}

namespace {

/// Collects a source's `size` bytes into `dst`, checking their count.
Status collect(const ProgramBuilder::WeightSource &source, uint64_t size,
               const std::string &name, unsigned char *dst) {
  uint64_t got = 0;
  TSL_RETURN_IF_ERROR(source([&](const void *data, size_t n) {
    if (got + n > size)
      return Status::error("weight '" + name + "': its source gives more "
                           "than its " + std::to_string(size) + " bytes");
    std::memcpy(dst + got, data, n);
    got += n;
    return Status::ok();
  }));
  if (got != size)
    return Status::error("weight '" + name + "': its source gave " +
                         std::to_string(got) + " of its " +
                         std::to_string(size) + " bytes");
  return Status::ok();
}

/// Writes a safetensors file of `tensors` to `path`, through a temporary
/// file beside it renamed when whole (writeSafetensors streams each
/// tensor from its source).
Status streamSafetensors(const std::string &path,
                         const std::vector<SafetensorsSource> &tensors,
                         WrittenFile &written) {
  const std::string tmp = path + ".tmp";
  Status status = writeSafetensors(tmp, tensors, {}, false, written);
  if (status && std::rename(tmp.c_str(), path.c_str()) != 0)
    status = Status::error(path + ": rename failed: " + std::strerror(errno));
  if (!status)
    ::unlink(tmp.c_str());
  return status;
}

} // namespace

Status ProgramBuilder::finish(ProgramData &out) {
  if (!badOps.empty())
    return Status::error("unknown op '" + badOps.front() + "'");
  planMemory();
  out.proto = std::make_unique<artifact::Program>(*prog);
  out.path = "program";
  // Program.weights' order: weightEntries are in it.
  for (const WeightEntry &w : weightEntries) {
    const uint64_t size = byteSize(w.dtype, w.shape).value_or(0);
    auto owned = std::make_shared<OwnedBytes>(size);
    TSL_RETURN_IF_ERROR(collect(w.source, size, w.name, owned->data()));
    out.weightData.push_back(owned->data());
    out.fileBacked.push_back(false);
    out.keep.push_back(owned);
  }
  return Status::ok();
}

ArtifactBuilder::ArtifactBuilder(std::string producer)
    : producer(std::move(producer)) {}
ArtifactBuilder::~ArtifactBuilder() = default;

void ArtifactBuilder::setMesh(
    std::vector<std::pair<std::string, int64_t>> axes) {
  meshAxes = std::move(axes);
}

ProgramBuilder &ArtifactBuilder::rank(int r) {
  auto it = ranks.find(r);
  if (it == ranks.end()) {
    it = ranks.emplace(r, ProgramBuilder()).first;
    it->second.prog->set_rank(r);
  }
  return it->second;
}

Status ArtifactBuilder::write(const std::string &dir) {
  std::vector<int64_t> sizes;
  for (auto &axis : meshAxes)
    sizes.push_back(axis.second);
  std::optional<int64_t> devices = checkedProduct(sizes);
  if (!devices)
    return Status::error(dir + ": the mesh " + shapeToString(sizes) +
                         " has more than 2^63 ranks");
  const int64_t numRanks = *devices;
  if (static_cast<int64_t>(ranks.size()) != numRanks ||
      (numRanks && ranks.rbegin()->first != numRanks - 1))
    return Status::error(dir + ": the mesh has " + std::to_string(numRanks) +
                         " ranks but programs were built for " +
                         std::to_string(ranks.size()));
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return Status::error(dir + ": cannot create directory: " +
                         std::strerror(errno));
  artifact::Manifest m;
  m.set_format_version(kFormatVersion);
  m.set_producer(producer);
  for (auto &[n, s] : meshAxes) {
    artifact::MeshAxis *a = m.add_mesh();
    a->set_name(n);
    a->set_size(s);
  }
  m.set_num_ranks(static_cast<int32_t>(numRanks));
  for (auto &[name, version] : plugins) {
    artifact::PluginRef *p = m.add_plugins();
    p->set_name(name);
    p->set_version(version);
  }
  // Weights that several ranks hold alike (the same share key): written
  // once, before the ranks' files, into shared.weights.safetensors.
  struct SharedWeight {
    int ranks = 0;
    // The first rank's entry: its dtype, shape and bytes are stored.
    const ProgramBuilder::WeightEntry *first = nullptr;
    size_t index = 0; // in sharedTensors
  };
  const std::string kSharedName = "shared.weights.safetensors";
  std::map<std::string, SharedWeight> shared;
  for (auto &[r, pb] : ranks) {
    std::set<std::string> seen;
    for (const ProgramBuilder::WeightEntry &w : pb.weightEntries)
      if (!w.shareKey.empty() &&
          pb.prog->buffers(pb.prog->weights(w.weight).buffer()).kind() ==
              artifact::Buffer::WEIGHT &&
          seen.insert(w.shareKey).second) {
        SharedWeight &sw = shared[w.shareKey];
        ++sw.ranks;
        if (!sw.first)
          sw.first = &w;
      }
  }
  std::vector<SafetensorsSource> sharedTensors;
  for (auto &[key, sw] : shared)
    if (sw.ranks > 1) {
      sw.index = sharedTensors.size();
      sharedTensors.push_back(
          {key, sw.first->dtype, sw.first->shape, sw.first->source});
    }
  WrittenFile sharedFile;
  if (!sharedTensors.empty())
    TSL_RETURN_IF_ERROR(streamSafetensors(dir + "/" + kSharedName,
                                          sharedTensors, sharedFile));
  for (auto &[r, pb] : ranks) {
    if (!pb.badOps.empty())
      return Status::error(dir + ": rank " + std::to_string(r) +
                           ": unknown op '" + pb.badOps.front() + "'");
    pb.planMemory();
    // Sizes come from the model: refuse what no runtime would load.
    for (const artifact::Buffer &b : pb.prog->buffers())
      if (!byteSize(static_cast<DType>(b.dtype()),
                    Shape(b.shape().begin(), b.shape().end())))
        return Status::error(dir + ": rank " + std::to_string(r) +
                             ": buffer " + std::to_string(b.id()) +
                             (b.name().empty() ? "" : " '" + b.name() + "'") +
                             ": its byte size overflows");
    if (pb.prog->arena_size() > kMaxArenaBytes)
      return Status::error(
          dir + ": rank " + std::to_string(r) + ": the planned arena is " +
          (pb.prog->arena_size() == kNoArena
               ? std::string("more than 2^64 bytes (its buffers' sizes sum "
                             "past 64 bits)")
               : std::to_string(pb.prog->arena_size()) + " bytes") +
          ", more than the " + std::to_string(kMaxArenaBytes) +
          " (64 TiB) a program may use");
    std::string progName = "rank" + std::to_string(r) + ".program.pb";
    std::string wName = "rank" + std::to_string(r) + ".weights.safetensors";
    // This rank's own weights stream into its file (index 0); those that
    // several ranks hold alike go to the shared file (index 1), once.
    std::vector<SafetensorsSource> own;
    std::vector<artifact::Weight *> ownWeights;
    bool usesShared = false;
    for (const ProgramBuilder::WeightEntry &w : pb.weightEntries) {
      artifact::Weight *pw = pb.prog->mutable_weights(w.weight);
      auto it = w.shareKey.empty() ? shared.end() : shared.find(w.shareKey);
      if (it != shared.end() && it->second.ranks > 1) {
        pw->set_name(w.shareKey);
        pw->set_file(1);
        pw->set_begin(sharedFile.offsets[it->second.index].first);
        pw->set_end(sharedFile.offsets[it->second.index].second);
        usesShared = true;
        continue;
      }
      own.push_back({w.name, w.dtype, w.shape, w.source});
      ownWeights.push_back(pw);
    }
    WrittenFile ownFile;
    TSL_RETURN_IF_ERROR(streamSafetensors(dir + "/" + wName, own, ownFile));
    for (size_t i = 0; i < ownWeights.size(); ++i) {
      ownWeights[i]->set_begin(ownFile.offsets[i].first);
      ownWeights[i]->set_end(ownFile.offsets[i].second);
    }
    std::string progBytes;
    if (!serializeDeterministic(*pb.prog, progBytes))
      return Status::error(dir + ": rank " + std::to_string(r) +
                           ": program serialisation failed (over 2 GB?)");
    artifact::RankEntry *re = m.add_ranks();
    re->set_rank(r);
    TSL_RETURN_IF_ERROR(writeFile(dir + "/" + progName, progBytes));
    artifact::FileEntry *pe = re->mutable_program();
    pe->set_path(progName);
    pe->set_size(progBytes.size());
    pe->set_crc32c(crc32c(progBytes.data(), progBytes.size()));
    artifact::FileEntry *we = re->add_weights();
    we->set_path(wName);
    we->set_size(ownFile.size);
    we->set_crc32c(ownFile.crc32c);
    if (usesShared) {
      artifact::FileEntry *se = re->add_weights();
      se->set_path(kSharedName);
      se->set_size(sharedFile.size);
      se->set_crc32c(sharedFile.crc32c);
    }
  }
  return writeFile(dir + "/manifest.pb", sealManifest(m));
}

} // namespace tessel::runtime
