//===- CheckpointIndexFuzzer.cpp - libFuzzer target for checkpoint indices ===//
//
// The input is a checkpoint's model.safetensors.index.json, as
// `tessel-run --resume DIR` reads it: parsed by parseCheckpointIndex, what
// readCheckpointInfo (tools/tessel-run) runs on the file's bytes. Reading
// the file depends on the bytes only through their size, so only an empty
// input goes through a file (in a checkpoint folder of this process's own);
// a file per input cost more than the parse. Any crash, signal or sanitizer
// report is a bug: every input must end in a CheckpointInfo or an error.
//
//===----------------------------------------------------------------------===//
#include "tessel/tooling/Checkpoint.h"
#include "FuzzTempDir.h"

#include <cstdint>
#include <cstdio>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tessel::tooling::CheckpointInfo info;
  if (size == 0) {
    const std::string &dir = fuzzTempDir();
    if (dir.empty())
      return 0;
    const std::string path = dir + "/model.safetensors.index.json";
    if (FILE *f = std::fopen(path.c_str(), "wb"))
      std::fclose(f);
    (void)tessel::tooling::readCheckpointInfo(dir, info);
    return 0;
  }
  const std::string text(reinterpret_cast<const char *>(data), size);
  (void)tessel::tooling::parseCheckpointIndex(
      "fuzz/model.safetensors.index.json", text, info);
  return 0;
}
