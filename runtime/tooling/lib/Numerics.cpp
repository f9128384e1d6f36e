//===- Numerics.cpp - tessel-run stops a training that goes non-finite ----===//
#include "tessel/tooling/Numerics.h"
#include "tessel/tooling/Trace.h"

#include "tessel/runtime/FusedProgram.h"
#include "tessel/runtime/Numerics.h"

#include <cmath>
#include <vector>

using namespace tessel::runtime;

namespace tessel::tooling {

namespace {

/// "step 3/8"; "run 3" when `stop` is 0.
std::string stepText(int64_t step, int64_t stop) {
  if (!stop)
    return "run " + std::to_string(step);
  return "step " + std::to_string(step) + "/" + std::to_string(stop);
}

/// What buffer `id` is, for messages: "weight 'w'", "input 'x'", ...
std::string describeBuffer(const Program &p, int id) {
  for (const auto &[name, in] : p.inputs)
    if (in == id)
      return "input '" + name + "'";
  const BufferInfo &b = p.buffers[id];
  switch (b.kind) {
  case BufferInfo::Kind::Weight:
    return "weight '" + b.name + "'";
  case BufferInfo::Kind::State:
    return "state '" + b.name + "'";
  case BufferInfo::Kind::Constant:
    return "a constant";
  case BufferInfo::Kind::Arena:
    break;
  }
  return "buffer " + std::to_string(id);
}

/// The instruction a finding names: "instruction 57 (matmul
/// '/model/layers.0/mlp/MatMul', backward, rank 1) produced NaN in result
/// 0 at [1, 5, 3]".
std::string describeFinding(const Program &p, const NumericsFinding &f,
                            int rank) {
  const Op &op = p.ops[f.op];
  std::vector<const char *> phases = stepPhases(p);
  std::string s = "instruction " + std::to_string(f.op) + " (" +
                  opKindName(op.kind);
  if (op.kind == OpKind::FusedElementwise) {
    // Its ops, in order: the finding is one of them.
    const std::vector<int64_t> program = fusedProgramOf(op);
    s += " of";
    for (size_t i = 0; i + 3 < program.size(); i += 4) {
      auto kind = opKindFromInt(static_cast<int>(program[i]));
      s += std::string(i ? ", " : " ") + (kind ? opKindName(*kind) : "?");
    }
  }
  if (!op.name.empty())
    s += " '" + op.name + "'";
  if (!phases.empty())
    s += std::string(", ") + phases[f.op];
  s += ", rank " + std::to_string(rank) + ")";
  const BufferInfo &r = p.buffers[op.results[f.result]];
  const std::string at =
      f.plainLayout ? " at [" + multiIndex(r.shape, f.element) + "]"
                    : " at element " + std::to_string(f.element) +
                          " (of a blocked layout)";
  const std::string value = floatText(f.value);
  if (f.sourceOperand >= 0) {
    const int id = op.operands.size() > size_t(f.sourceOperand)
                       ? op.operands[f.sourceOperand]
                       : -1;
    s += " read NaN from its operand " + std::to_string(f.sourceOperand) +
         (id >= 0 ? " (" + describeBuffer(p, id) + ")" : std::string()) +
         ": result " + std::to_string(f.result) + " is " + value + at;
  } else if (op.kind == OpKind::Recv) {
    s += " received " + value + " from rank " + std::to_string(op.coll.peer) +
         ": result " + std::to_string(f.result) + at;
  } else if (static_cast<int>(op.kind) >= static_cast<int>(OpKind::AllReduce) &&
             static_cast<int>(op.kind) <= static_cast<int>(OpKind::Recv)) {
    // A collective whose operands here were finite: another rank's were not.
    s += " received " + value + " from another rank: result " +
         std::to_string(f.result) + at;
  } else {
    s += " produced " + value + " from finite operands: result " +
         std::to_string(f.result) + at;
    if (op.kind == OpKind::FusedElementwise)
      s += " (tesselc --no-fuse-elementwise names the op)";
  }
  return s;
}

} // namespace

Status NumericsGuard::agree(const std::string &mine, const std::string &prefix,
                            const std::string &others) const {
  if (worldSize <= 1 || !comm)
    return mine.empty() ? Status::ok() : Status::error(mine);
  int64_t flag = mine.empty() ? 0 : 1;
  std::vector<int64_t> flags(worldSize, 0);
  TensorView in(&flag, DType::I64, Shape{1});
  TensorView all(flags.data(), DType::I64, Shape{worldSize});
  if (Status s = comm->allGather(in, all, 0); !s)
    return Status::error(prefix + ": checking every rank's values: " +
                         s.message());
  std::string bad;
  for (int r = 0; r < worldSize; ++r)
    if (flags[r])
      bad += (bad.empty() ? "" : ", ") + std::to_string(r);
  if (bad.empty())
    return Status::ok();
  if (!mine.empty())
    return Status::error(mine);
  return Status::error(prefix + ": rank" +
                       (bad.find(',') == std::string::npos ? " " : "s ") +
                       bad + " " + others);
}

std::string NumericsGuard::finding(const Executor &exec, int64_t step,
                                  int64_t stop) const {
  if (!instructions || !exec.lastNumerics().found)
    return "";
  return stepText(step, stop) + ": " +
         describeFinding(exec.program(), exec.lastNumerics(), rank);
}

Status NumericsGuard::afterStep(const Executor &exec, int64_t step,
                                int64_t stop, const float *loss) const {
  // Every rank decides alike whether to agree: a training step always (a
  // pipeline's loss is on one rank), a plain run with checks only.
  if (!stop && !instructions)
    return Status::ok();
  const std::string where = stepText(step, stop);
  const std::string stops =
      stop ? ": the training stops (nothing of this step is saved)" : "";
  std::string mine = finding(exec, step, stop);
  if (!mine.empty())
    mine += stops;
  else if (loss && !std::isfinite(*loss))
    mine = where + ": the loss is " + floatText(*loss) + stops +
           (instructions ? "" : "; tessel-run --check-numerics names the "
                                "instruction that made the first non-finite "
                                "value");
  return agree(mine, where,
               "found a non-finite value (see its message)" + stops);
}

Status NumericsGuard::checkStates(Executor &exec, int64_t step,
                                  const std::string &what) const {
  const std::string where = "after step " + std::to_string(step);
  std::string mine;
  const Program &p = exec.program();
  for (const auto &[name, id] : p.states) {
    if (p.buffers[id].dtype != DType::F32)
      continue;
    Tensor t;
    TSL_RETURN_IF_ERROR(exec.getState(name, t));
    int64_t first = 0;
    if (scanFinite(t.data<float>(), t.numElements(), first) ==
        Finiteness::Finite)
      continue;
    mine = where + ": state '" + name + "' holds " +
           floatText(t.data<float>()[first]) + " at " +
           "[" + multiIndex(t.shape(), first) + "]: " +
           what + " is not written and the training stops" +
           (instructions ? "" : " (tessel-run --check-numerics names the "
                                "instruction that made the first non-finite "
                                "value)");
    break;
  }
  return agree(mine, where,
               "hold a non-finite state (see its message): " + what +
                   " is not written and the training stops");
}

} // namespace tessel::tooling
