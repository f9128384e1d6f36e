//===- Executor.cpp - Backend-neutral part of executors -------------------===//
#include "tessel/runtime/Executor.h"

#include "CudaPlugin.h"

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

// Backends, defined in runtime/cpu and runtime/cuda.
namespace cpu {
Status createCpuExecutor(std::shared_ptr<const Program> program,
                         const ExecutorOptions &options,
                         std::unique_ptr<Executor> &out);
} // namespace cpu

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

std::vector<std::string> availableBackends() {
  std::vector<std::string> r = {"cpu"};
  if (haveCudaPlugin())
    r.push_back("cuda");
  return r;
}

Status createExecutor(const std::string &backend,
                      std::shared_ptr<const Program> program,
                      const ExecutorOptions &options,
                      std::unique_ptr<Executor> &out) {
  if (!program)
    return Status::error("createExecutor: no program");
  if (options.threads < 1)
    return Status::error("threads must be >= 1, got " +
                         std::to_string(options.threads));
  if (backend == "cpu")
    return cpu::createCpuExecutor(std::move(program), options, out);
  if (backend == "cuda" && haveCudaPlugin()) {
    // runtime/cuda is a shared library loaded on first use (CudaPlugin.h).
    using CreateFn =
        void (*)(std::shared_ptr<const Program> *, const ExecutorOptions *,
                 std::unique_ptr<Executor> *, Status *);
    void *address = nullptr;
    TSL_RETURN_IF_ERROR(
        cudaPluginSymbol("tessel_cuda_create_executor", address));
    Status s = Status::ok();
    reinterpret_cast<CreateFn>(address)(&program, &options, &out, &s);
    return s;
  }
  std::string known;
  for (const std::string &b : availableBackends())
    known += (known.empty() ? "" : ", ") + b;
  return Status::error("unknown backend '" + backend + "' (built: " + known +
                       ")");
}

} // namespace tessel::runtime
