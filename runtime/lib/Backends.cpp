//===- Backends.cpp - createExecutor: a program on a named backend --------===//
//
// The CPU backend is linked in (runtime/cpu, TesselCpu); the CUDA backend is
// a plugin loaded on first use (CudaPlugin.h).
//
//===----------------------------------------------------------------------===//
#include "tessel/runtime/Executor.h"

#include "CudaPlugin.h"

namespace tessel::runtime {

namespace cpu {
Status createCpuExecutor(std::shared_ptr<const Program> program,
                         const ExecutorOptions &options,
                         std::unique_ptr<Executor> &out);
} // namespace cpu

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
