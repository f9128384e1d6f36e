//===- Executor.cpp - The executor interface's backend-neutral part -------===//
//
// What every backend's executor inherits (inputs, outputs and states by
// name, checked against the program). The factory that picks a backend,
// createExecutor, is runtime/lib/Backends.cpp: it names the backends, which
// derive from this.
//
//===----------------------------------------------------------------------===//
#include "tessel/runtime/Executor.h"
#include "tessel/runtime/HalfFloat.h"

#include <algorithm>
#include <sched.h>
#include <string_view>

namespace tessel::runtime {

bool overlapsCollectives(CollectiveOverlap overlap, const char *backend,
                         int cores, int threads) {
  switch (overlap) {
  case CollectiveOverlap::On:
    return true;
  case CollectiveOverlap::Off:
    return false;
  case CollectiveOverlap::Auto:
    break;
  }
  return std::string_view(backend) != "shm" || cores > threads;
}

int getAllowedCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return 1;
  return std::max(1, CPU_COUNT(&set));
}

Executor::Executor(std::shared_ptr<const Program> program)
    : prog(std::move(program)) {}
Executor::~Executor() = default;

Status Executor::setInput(const std::string &name, const Tensor &t) {
  return setInputFrom(name, t.dtype(), t.shape(), t.data());
}

Status Executor::setInputFrom(const std::string &name, DType dtype,
                              const Shape &shape, const void *data) {
  int id = prog->findInput(name);
  if (id < 0)
    return Status::error(
        "unknown input '" + name +
        "' (the program's inputs: " + Program::namesOf(prog->inputs) + ")");
  const BufferInfo &b = prog->buffers[id];
  // numpy has no bf16: a bf16 input takes f32, rounded to nearest even
  // (docs/precision.md).
  if (b.dtype == DType::BF16 && dtype == DType::F32 && shape == b.shape) {
    std::vector<uint16_t> half(static_cast<size_t>(b.numel));
    roundToHalves(DType::BF16, static_cast<const float *>(data), half.data(),
                  half.size());
    return writeBuffer(id, half.data());
  }
  if (dtype != b.dtype || shape != b.shape)
    return Status::error("input '" + name + "': expected " +
                         dtypeName(b.dtype) + " " + shapeToString(b.shape) +
                         ", got " + dtypeName(dtype) + " " +
                         shapeToString(shape));
  return writeBuffer(id, data);
}

Status Executor::getOutput(const std::string &name, Tensor &out) {
  int id = prog->findOutput(name);
  if (id < 0)
    return Status::error("unknown output '" + name + "'");
  const BufferInfo &b = prog->buffers[id];
  Tensor t(b.dtype, b.shape);
  TSL_RETURN_IF_ERROR(readBuffer(id, t.data()));
  out = std::move(t);
  return Status::ok();
}

Status Executor::getState(const std::string &name, Tensor &out) {
  int id = prog->findState(name);
  if (id < 0)
    return Status::error(
        "unknown state '" + name +
        "' (the program's states: " + Program::namesOf(prog->states) + ")");
  const BufferInfo &b = prog->buffers[id];
  Tensor t(b.dtype, b.shape);
  TSL_RETURN_IF_ERROR(readBuffer(id, t.data()));
  out = std::move(t);
  return Status::ok();
}

Status Executor::setState(const std::string &name, const Tensor &t) {
  int id = prog->findState(name);
  if (id < 0)
    return Status::error(
        "unknown state '" + name +
        "' (the program's states: " + Program::namesOf(prog->states) + ")");
  const BufferInfo &b = prog->buffers[id];
  if (t.dtype() != b.dtype || t.shape() != b.shape)
    return Status::error("state '" + name + "': expected " +
                         dtypeName(b.dtype) + " " + shapeToString(b.shape) +
                         ", got " + dtypeName(t.dtype()) + " " +
                         shapeToString(t.shape()));
  return writeBuffer(id, t.data());
}

} // namespace tessel::runtime
