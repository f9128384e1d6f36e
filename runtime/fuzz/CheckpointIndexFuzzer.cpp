//===- CheckpointIndexFuzzer.cpp - libFuzzer target for checkpoint indices ===//
//
// The input is a checkpoint's model.safetensors.index.json, as
// `tessel-run --resume DIR` reads it: written into a checkpoint folder of
// this process's own and read with readCheckpointInfo (tools/tessel-run).
// Any crash, signal or sanitizer report is a bug: every input must end in a
// CheckpointInfo or an error.
//
//===----------------------------------------------------------------------===//
#include "Checkpoint.h"
#include "FuzzTempDir.h"

#include <cstdint>
#include <cstdio>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &dir = fuzzTempDir();
  if (dir.empty())
    return 0;
  const std::string path = dir + "/model.safetensors.index.json";
  if (FILE *f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  tessel::run::CheckpointInfo info;
  (void)tessel::run::readCheckpointInfo(dir, info);
  return 0;
}
