//===- Program.h - A validated per-rank program -----------------*- C++ -*-===//
//
// The backend-neutral form of one rank's artifact::Program: buffers with
// their storage resolved, and instructions whose operands, shapes and
// attributes have all been checked, so that backends only execute.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_PROGRAM_H
#define TESSEL_RUNTIME_PROGRAM_H

#include "tessel/runtime/DType.h"
#include "tessel/runtime/MappedFile.h"
#include "tessel/runtime/OpKind.h"
#include "tessel/runtime/ReduceKind.h"
#include "tessel/runtime/Status.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessel::artifact {
class Program;
} // namespace tessel::artifact

namespace tessel::runtime {

struct BufferInfo {
  /// State: persists across runs of an executor, which owns its storage
  /// (outside the arena) and initialises it from `data`, or with zeros when
  /// `data` is null; instructions may write it.
  enum class Kind { Arena, Weight, Constant, State };
  int id = 0;
  DType dtype = DType::F32;
  Shape shape;
  int64_t numel = 0;
  uint64_t bytes = 0;
  Kind kind = Kind::Arena;
  uint64_t offset = 0;          // Arena only
  /// Weight and Constant: the read-only bytes. State: its initial value
  /// (its Weight entry's bytes), or null for zeros.
  const void *data = nullptr;
  /// Weight (and State): `data` lies in a read-only file mapping, so a
  /// kernel that keeps its own (prepacked) copy, or an executor that copied
  /// a state's initial value, may drop these pages (dropFileBackedPages).
  bool fileBacked = false;
  std::string name;
  /// State: where this block lies in the whole state (Buffer.global_shape):
  /// the global shape and the block's start in each dim; the block is
  /// `shape` (it may run past globalShape where a dim is padded). Without
  /// a recorded layout: `shape` and zeros.
  Shape globalShape;
  std::vector<int64_t> globalOffset;
  /// Whether the artifact recorded the layout, or the state is a scalar
  /// (else each rank's state is its own, and a checkpoint of it loads on
  /// the same rank only).
  bool hasLayout = false;
  /// State: kept in host memory (Buffer.host: Gemini's host chunks). The
  /// CUDA backend allocates it in pinned host memory; the CPU ignores it.
  bool host = false;

  /// Bytes that never change while the program runs (Weight, Constant):
  /// kernels may prepare (prepack) them once at executor creation.
  bool isReadOnly() const {
    return kind == Kind::Weight || kind == Kind::Constant;
  }
};

enum class ComparePredicate { Eq, Ne, Lt, Le, Gt, Ge };

/// Attributes of collectives and point-to-point ops (checked by
/// runtime/comm/CollectiveAttrs.cpp).
struct CollectiveAttrs {
  std::vector<int> group;   // ordered world ranks; {rank} when not given
  bool groupGiven = false;
  int index = 0;            // this rank's position in `group`
  ReduceKind reduce = ReduceKind::Sum;
  int64_t dim = 0, splitDim = 0, concatDim = 0;
  std::vector<std::pair<int, int>> pairs; // collective_permute, group indices
  int root = 0;             // broadcast, group index
  int peer = 0;             // send, recv: world rank
  int64_t tag = 0;
};

/// One attribute of an instruction as the artifact holds it.
struct AttrValue {
  enum class Kind { Ints, Floats, Str };
  Kind kind = Kind::Ints;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::string str;
};

/// The pipeline schedule action an instruction belongs to (artifact
/// PipelineAction, docs/pipeline.md): phase "F", "B", "W", "BW", "STEP",
/// "SEND" or "RECV" of (virtual) stage `stage` and microbatch `microbatch`
/// (-1 for STEP). An empty phase: not part of an action.
struct PipelineAction {
  std::string phase;
  int stage = 0;
  int microbatch = -1;
  bool empty() const { return phase.empty(); }
  /// "F 1.3" (phase, stage, microbatch), "STEP 1": for traces.
  std::string label() const;
};

/// A checked instruction. Only the fields of its kind are meaningful.
struct Op {
  OpKind kind = OpKind::Copy;
  std::vector<int> operands;
  std::vector<int> results;
  std::string name;

  // Attributes, parsed and normalised (negative axes made positive).
  bool tanhApproximation = false;      // gelu
  DType to = DType::F32;               // cast
  ComparePredicate predicate = ComparePredicate::Eq;
  bool transA = false, transB = false; // gemm
  float alpha = 1.0f, beta = 1.0f;     // gemm
  std::vector<int64_t> dims;           // reductions, sorted, unique
  bool keepDims = true;                // reductions
  int64_t axis = 0;                    // softmax, norms, gather, concat, split
  float epsilon = 1e-5f;               // norms
  std::vector<int64_t> perm;           // transpose
  std::vector<int64_t> starts, ends, steps; // slice
  std::vector<int64_t> sizes;          // split
  std::vector<int64_t> kernel;         // pools: kh, kw
  std::vector<int64_t> strides;        // conv, pools: sh, sw
  std::vector<int64_t> pads;           // conv, pools: top, left, bottom, right
  std::vector<int64_t> dilations;      // conv: dh, dw
  int64_t group = 1;                   // conv
  bool countIncludePad = false;        // avg_pool
  CollectiveAttrs coll;                // collectives, send, recv
  PipelineAction action;               // pipelined programs

  /// Every attribute of the instruction, as the artifact held it and checked
  /// against the op table's declaration of its kind (name and type). Ops
  /// without a parsed field above read theirs here when their kernel's step
  /// is built (once, at executor creation: never per run).
  std::map<std::string, AttrValue> attrs;
  /// The single float (or integer) attribute `name`, or `dflt` when absent.
  float floatAttr(const std::string &name, float dflt) const;
  /// The single integer attribute `name`, or `dflt` when absent.
  int64_t intAttr(const std::string &name, int64_t dflt) const;
};

/// This machine's physical memory in bytes (0 when unknown): what an arena
/// is compared with, and what refusals name beside the bytes needed.
uint64_t physicalMemoryBytes();

class Program {
public:
  /// Validates `proto` and resolves its buffers. `weightData[i]` and
  /// `weightSize[i]` give the bytes of weight entry i (already located in
  /// its safetensors file); `keepAlive` owns them. `what` names the source in
  /// messages (e.g. the program file's path). `fileBacked[i]`, when given,
  /// says weight entry i lies in a read-only file mapping.
  static Status create(const artifact::Program &proto,
                       const std::vector<const void *> &weightData,
                       std::vector<std::shared_ptr<Storage>> keepAlive,
                       const std::string &what,
                       std::shared_ptr<const Program> &out,
                       const std::vector<bool> *fileBacked = nullptr);

  int rank = 0;
  uint64_t arenaSize = 0;
  std::vector<BufferInfo> buffers;
  std::vector<std::pair<std::string, int>> inputs;
  std::vector<std::pair<std::string, int>> outputs;
  /// The State buffers by name (their Buffer.name), in buffer order: what
  /// a checkpoint saves.
  std::vector<std::pair<std::string, int>> states;
  std::vector<Op> ops;
  /// Some instruction carries a pipeline action (a pipelined step program).
  bool pipelined = false;

  /// Buffer id bound to input/output/state `name`, or -1.
  int findInput(const std::string &name) const;
  /// The names of `bindings` (inputs, outputs or states), comma separated,
  /// "none" when empty: for messages.
  static std::string namesOf(
      const std::vector<std::pair<std::string, int>> &bindings);
  int findOutput(const std::string &name) const;
  int findState(const std::string &name) const;

private:
  std::vector<std::shared_ptr<Storage>> storage;
};

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_PROGRAM_H
