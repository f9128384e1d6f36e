//===- ArtifactBuilder.h - Writing artifacts programmatically ---*- C++ -*-===//
//
// Builds an artifact in memory and writes it as a NAME.tsl/ directory, or
// turns one rank's program straight into a Program for an Executor. The
// compiler's exporter and the runtime tests both use it.
//
//   ArtifactBuilder b("tesselc");
//   ProgramBuilder &p = b.rank(0);
//   int x = p.addInput("x", DType::F32, {4, 8});
//   int w = p.addWeight("w", DType::F32, {8, 2}, wData);
//   int y = p.addBuffer(DType::F32, {4, 2});
//   p.addOp("matmul", {x, w}, {y});
//   p.addOutput("y", y);
//   int s = p.addState("count", DType::F32, {}, nullptr); // zeros, persists
//   Status s = b.write("model.tsl");
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_ARTIFACTBUILDER_H
#define TESSEL_RUNTIME_ARTIFACTBUILDER_H

#include "tessel/runtime/Artifact.h"
#include "tessel/runtime/DType.h"
#include "tessel/runtime/MappedFile.h"
#include "tessel/runtime/Safetensors.h"
#include "tessel/runtime/Status.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace tessel::artifact {
class Program;
} // namespace tessel::artifact

namespace tessel::runtime {

/// Attributes of one instruction: name -> int list | float list | string.
class Attrs {
public:
  using Value =
      std::variant<std::vector<int64_t>, std::vector<float>, std::string>;
  Attrs &i(const std::string &name, int64_t v) { return is(name, {v}); }
  Attrs &is(const std::string &name, std::vector<int64_t> v) {
    values[name] = std::move(v);
    return *this;
  }
  Attrs &f(const std::string &name, float v) { return fs(name, {v}); }
  Attrs &fs(const std::string &name, std::vector<float> v) {
    values[name] = std::move(v);
    return *this;
  }
  Attrs &s(const std::string &name, std::string v) {
    values[name] = std::move(v);
    return *this;
  }
  std::map<std::string, Value> values;
};

class ProgramBuilder {
public:
  ProgramBuilder();
  ~ProgramBuilder();
  ProgramBuilder(ProgramBuilder &&) noexcept;

  /// An arena buffer; `offset` < 0 lets build()/write() plan it by liveness.
  int addBuffer(DType dtype, Shape shape, std::string name = "",
                int64_t offset = -1);
  /// An arena buffer bound to graph input `name`.
  int addInput(const std::string &name, DType dtype, Shape shape);
  /// Binds graph output `name` to buffer `buffer`.
  void addOutput(const std::string &name, int buffer);
  /// Receives bytes in order, in pieces of any size.
  using ByteSink = ::tessel::runtime::ByteSink;
  /// Produces a weight's bytes when they are written: passes exactly the
  /// buffer's size, in order, to `sink` (a compiler streams a block of a
  /// model's external data in bounded windows, so that no whole weight is
  /// ever held). It may be called more than once; its message names the
  /// weight and the file it reads.
  using WeightSource = ::tessel::runtime::TensorSource;

  /// A weight stored in this rank's safetensors file (bytes are copied).
  int addWeight(const std::string &name, DType dtype, Shape shape,
                const void *data);
  /// A weight whose bytes `source` produces when the artifact is written.
  /// `shareKey`, when not empty, says that every weight with that key holds
  /// the same bytes: where several ranks hold one, write() stores it once,
  /// in shared.weights.safetensors under the key.
  int addWeight(const std::string &name, DType dtype, Shape shape,
                WeightSource source, std::string shareKey = "");
  /// A state buffer (kind STATE): persists across runs of the executor,
  /// read like a weight and written by instructions (a training step's
  /// parameters and optimizer state); `name` is its key in checkpoints.
  /// Initial value: `init` (bytes copied, stored in this rank's safetensors
  /// file under `name`, as addWeight does), or zeros when `init` is null.
  int addState(const std::string &name, DType dtype, Shape shape,
               const void *init);
  /// addState with an initial value that `init` produces (never shared).
  int addState(const std::string &name, DType dtype, Shape shape,
               WeightSource init);
  /// Records where state `buffer`'s block lies in the whole state: its
  /// global shape and the block's offset in each dim (Buffer.global_shape).
  void setStateLayout(int buffer, const Shape &globalShape,
                      const std::vector<int64_t> &offset);
  /// Keeps state `buffer` in host memory (Buffer.host: Gemini's host
  /// chunks; pinned host memory on CUDA).
  void setHostMemory(int buffer);
  /// A small constant held inline in the program (bytes are copied).
  int addConstant(DType dtype, Shape shape, const void *data,
                  std::string name = "");
  /// Appends an instruction; `op` is an OpKind name ("matmul").
  /// Unknown names are reported by build()/write().
  void addOp(const std::string &op, std::vector<int> operands,
             std::vector<int> results, Attrs attrs = {},
             std::string name = "");
  /// Tags the last instruction added with a pipeline schedule action
  /// (Instruction.action: phase "F", "B", "W", "BW", "STEP", "SEND",
  /// "RECV"; microbatch -1 for STEP).
  void setAction(const std::string &phase, int stage, int microbatch);

  /// Runs planBuffers() over the arena buffers without an offset.
  void planMemory();
  /// The protobuf message as it stands (after planMemory()).
  const artifact::Program &proto() const { return *prog; }
  artifact::Program &proto() { return *prog; }
  /// Plans memory and hands the program over as an artifact would: a copy
  /// of the protobuf and the weights' bytes in memory (no files involved).
  Status finish(ProgramData &out);
  /// finish(), then validates the program into an executable Program.
  /// Defined by the runtime library (runtime/lib/LoadProgram.cpp).
  Status build(std::shared_ptr<const Program> &out);

private:
  friend class ArtifactBuilder;
  struct WeightEntry {
    std::string name;
    DType dtype;
    Shape shape;
    WeightSource source;
    std::string shareKey; // empty: this rank's own
    int weight = 0;       // its index in Program.weights
  };
  std::unique_ptr<artifact::Program> prog;
  std::vector<WeightEntry> weightEntries;
  std::vector<std::string> badOps;
};

class ArtifactBuilder {
public:
  explicit ArtifactBuilder(std::string producer = "tessel");
  ~ArtifactBuilder();

  /// Mesh axes (name, size); defaults to a single rank, no axes.
  void setMesh(std::vector<std::pair<std::string, int64_t>> axes);
  /// Records that running the artifact needs plugin `name` at `version`.
  void requirePlugin(std::string name, std::string version) {
    plugins.emplace_back(std::move(name), std::move(version));
  }
  /// The program of rank `r` (created on first use).
  ProgramBuilder &rank(int r);

  /// Writes `dir` (created if missing; existing artifact files replaced):
  /// manifest.pb, rank<N>.program.pb, rank<N>.weights.safetensors, and
  /// shared.weights.safetensors where several ranks hold a weight of the
  /// same share key. Weights are streamed from their sources: the builder
  /// never holds a weights file in memory.
  Status write(const std::string &dir);

private:
  std::string producer;
  std::vector<std::pair<std::string, int64_t>> meshAxes;
  std::vector<std::pair<std::string, std::string>> plugins;
  std::map<int, ProgramBuilder> ranks;
};

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_ARTIFACTBUILDER_H
