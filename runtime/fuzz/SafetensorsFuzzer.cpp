//===- SafetensorsFuzzer.cpp - libFuzzer target for safetensors headers ---===//
//
// The input is a safetensors image (weights files, checkpoint rank files):
// parseSafetensors, then every tensor's bytes are read through the index as
// the loader does (ASan checks that they lie inside the image). Any crash,
// signal or sanitizer report is a bug: every input must end in an index or
// an error.
//
//===----------------------------------------------------------------------===//
#include "tessel/runtime/Safetensors.h"

#include <cstdint>
#include <cstdlib>

using namespace tessel::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  SafetensorsIndex index;
  if (!parseSafetensors(data, size, "fuzz.safetensors", index))
    return 0;
  unsigned sum = 0;
  for (const auto &[name, e] : index.tensors) {
    int64_t n = numElements(e.shape);
    if (n < 0 || e.end - e.begin != uint64_t(n) * dtypeSize(e.dtype))
      std::abort(); // the parser let a size mismatch through
    for (uint64_t k = e.begin; k < e.end; ++k)
      sum += data[index.dataStart + k];
  }
  volatile unsigned sink = sum;
  (void)sink;
  return 0;
}
