//===- CudaPlugin.cpp - Load libtessel-cuda.so on first use ---------------===//
#include "CudaPlugin.h"

#include "tessel/runtime/Communicator.h"

#ifdef TESSEL_RUNTIME_HAVE_CUDA
#include <climits>
#include <dlfcn.h>
#include <mutex>
#include <unistd.h>
#include <vector>
#endif

namespace tessel::runtime {

#ifdef TESSEL_RUNTIME_HAVE_CUDA

bool haveCudaPlugin() { return true; }

namespace {
struct Plugin {
  void *handle = nullptr;
  std::string error;
};

const Plugin &plugin() {
  static std::once_flag once;
  static Plugin p;
  std::call_once(once, [] {
    std::vector<std::string> candidates;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
      std::string dir(exe, static_cast<size_t>(n));
      dir = dir.substr(0, dir.find_last_of('/'));
      candidates.push_back(dir + "/../lib/" TESSEL_CUDA_PLUGIN);
      candidates.push_back(dir + "/" TESSEL_CUDA_PLUGIN);
    }
    candidates.push_back(TESSEL_CUDA_PLUGIN);
    std::string tried;
    for (const std::string &path : candidates) {
      p.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (p.handle)
        return;
      const char *why = dlerror();
      tried += "\n  " + path + ": " + (why ? why : "not loadable");
    }
    p.error = "the cuda backend library " TESSEL_CUDA_PLUGIN
              " could not be loaded:" +
              tried;
  });
  return p;
}
} // namespace

Status cudaPluginSymbol(const char *symbol, void *&address) {
  const Plugin &p = plugin();
  if (!p.handle)
    return Status::error(p.error);
  address = dlsym(p.handle, symbol);
  if (!address)
    return Status::error(
        std::string("the cuda backend library " TESSEL_CUDA_PLUGIN " has no ") +
        symbol + " (a library of another build?)");
  return Status::ok();
}

#else

bool haveCudaPlugin() { return false; }

Status cudaPluginSymbol(const char *symbol, void *&) {
  return Status::error(
      std::string("this build has no CUDA backend (") + symbol +
      "): it needs a CUDA toolkit with nvcc at configure time");
}

#endif // TESSEL_RUNTIME_HAVE_CUDA

// NCCL's communicator (runtime/comm/nccl) is in the plugin too.
bool haveNcclCommunicator() {
#ifdef TESSEL_RUNTIME_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

Status createNcclCommunicator(const CommOptions &options,
                              std::unique_ptr<Communicator> &out) {
  if (!haveNcclCommunicator())
    return Status::error("this build has no NCCL (it needs a CUDA toolkit "
                         "with nvcc, nccl.h and libnccl at configure time)");
  using CreateFn =
      void (*)(const CommOptions *, std::unique_ptr<Communicator> *, Status *);
  void *address = nullptr;
  TSL_RETURN_IF_ERROR(
      cudaPluginSymbol("tessel_cuda_create_nccl_communicator", address));
  Status status = Status::ok();
  reinterpret_cast<CreateFn>(address)(&options, &out, &status);
  return status;
}

} // namespace tessel::runtime
