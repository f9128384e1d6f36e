//===- CudaPlugin.h - The CUDA plugin, loaded on first use ------*- C++ -*-===//
//
// The CUDA backend and NCCL's communicator live in one shared library,
// libtessel-cuda.so (runtime/cuda, runtime/comm/nccl), which the runtime
// loads (dlopen) the first time a program runs on "cuda" or a communicator
// on NCCL is asked for. Nothing else links CUDA, cuBLAS or NCCL: tessel-run
// starts on a machine without them, and a CPU run never maps them (linked
// in, cuBLAS alone added ~143 MB of resident memory to every CPU run).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_LIB_CUDAPLUGIN_H
#define TESSEL_RUNTIME_LIB_CUDAPLUGIN_H

#include "tessel/runtime/Status.h"

namespace tessel::runtime {

/// Whether this build made the CUDA plugin (it may still fail to load).
bool haveCudaPlugin();

/// The address of `symbol` in the CUDA plugin, loading it once: beside the
/// binary (<bin>/../lib, <bin>), then the loader's path. When the library
/// or a library it needs (libcudart, libcublas, libnccl) is missing, the
/// error names each path tried and what the loader said.
Status cudaPluginSymbol(const char *symbol, void *&address);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_LIB_CUDAPLUGIN_H
