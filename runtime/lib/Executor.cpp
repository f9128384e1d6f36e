//===- Executor.cpp - Backend-neutral part of executors -------------------===//
#include "tessel/runtime/Executor.h"

namespace tessel::runtime {

// Backends, defined in runtime/cpu and runtime/cuda.
namespace cpu {
Status createCpuExecutor(std::shared_ptr<const Program> program,
                         const ExecutorOptions &options,
                         std::unique_ptr<Executor> &out);
} // namespace cpu
#ifdef TESSEL_RUNTIME_HAVE_CUDA
namespace cuda {
Status createCudaExecutor(std::shared_ptr<const Program> program,
                          const ExecutorOptions &options,
                          std::unique_ptr<Executor> &out);
} // namespace cuda
#endif

Executor::Executor(std::shared_ptr<const Program> program)
    : prog(std::move(program)) {}
Executor::~Executor() = default;

Status Executor::setInput(const std::string &name, const Tensor &t) {
  int id = prog->findInput(name);
  if (id < 0) {
    std::string known;
    for (auto &[n, b] : prog->inputs)
      known += (known.empty() ? "" : ", ") + n;
    return Status::error("unknown input '" + name + "' (the program's inputs: " +
                         (known.empty() ? "none" : known) + ")");
  }
  const BufferInfo &b = prog->buffers[id];
  if (t.dtype() != b.dtype || t.shape() != b.shape)
    return Status::error("input '" + name + "': expected " +
                         dtypeName(b.dtype) + " " + shapeToString(b.shape) +
                         ", got " + dtypeName(t.dtype()) + " " +
                         shapeToString(t.shape()));
  return writeBuffer(id, t.data());
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

std::vector<std::string> availableBackends() {
  std::vector<std::string> r = {"cpu"};
#ifdef TESSEL_RUNTIME_HAVE_CUDA
  r.push_back("cuda");
#endif
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
#ifdef TESSEL_RUNTIME_HAVE_CUDA
  if (backend == "cuda")
    return cuda::createCudaExecutor(std::move(program), options, out);
#endif
  std::string known;
  for (const std::string &b : availableBackends())
    known += (known.empty() ? "" : ", ") + b;
  return Status::error("unknown backend '" + backend + "' (built: " + known +
                       ")");
}

} // namespace tessel::runtime
