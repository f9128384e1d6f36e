//===- NpyFuzzer.cpp - libFuzzer target for the .npy reader ---------------===//
//
// The input is a .npy image, as `tessel-run` reads each input file: parsed
// with parseNpy; when it parses, re-encoded and parsed again (the round trip
// must give the same tensor). Any crash, signal or sanitizer report is a
// bug: every input must end in a tensor or an error.
//
//===----------------------------------------------------------------------===//
#include "tessel/runtime/Npy.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

using namespace tessel::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Tensor t;
  if (!parseNpy(data, size, "fuzz.npy", t))
    return 0;
  std::string again = encodeNpy(t);
  Tensor u;
  if (!parseNpy(again.data(), again.size(), "re-encoded", u) ||
      u.dtype() != t.dtype() || u.shape() != t.shape() ||
      u.byteSize() != t.byteSize() ||
      std::memcmp(u.data(), t.data(), t.byteSize()) != 0)
    std::abort(); // the writer and the reader disagree
  return 0;
}
