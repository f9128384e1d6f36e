//===- CheckpointIndexFuzzer.cpp - libFuzzer target for checkpoints -------===//
//
// Checkpoints as `tessel-run --resume DIR` reads them (runtime/tooling,
// Checkpoint.h). The input's first byte picks what it is:
//
// - 'R': the rest is a model.safetensors.index.json as it is: its checksum
//   (index_crc32c) is checked first, so almost every input stops there.
// - 'D': a whole checkpoint directory: a 4-byte little-endian length, that
//   many bytes of index JSON without its "files" (a closing brace ends it,
//   or not), a second length, that many bytes of rank0.safetensors, and the
//   rest as losses.npy (none when empty). The harness records the files'
//   sizes and CRC-32Cs and seals the index, as a save does, writes the three
//   files into a checkpoint folder of this process's own and reads it whole
//   (SavedStates::read, readCheckpointLosses): the rank file's header and
//   metadata, the layout and the weight map are fuzzed past the checksums.
// - anything else: the whole input is an index's JSON (a closing brace ends
//   it, or not), sealed with its checksum as a save does, then parsed
//   (parseCheckpointIndex, what readCheckpointInfo runs on the file's
//   bytes).
//
// An empty input goes through a file (an empty index). Any crash, signal
// or sanitizer report is a bug: every input must end in a checkpoint or an
// error.
//
//===----------------------------------------------------------------------===//
#include "tessel/tooling/Checkpoint.h"
#include "FuzzTempDir.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>
#include <vector>

using namespace tessel::runtime;
using tessel::tooling::checkpointFileEntry;

namespace {

void writeFile(const std::string &path, const std::string &bytes) {
  if (FILE *f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
}

/// Index JSON as the body sealIndex takes: its last brace dropped, a comma
/// after its last member.
std::string indexBody(std::string text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n'))
    text.pop_back();
  if (!text.empty() && text.back() == '}')
    text.pop_back();
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n'))
    text.pop_back();
  if (!text.empty() && text.back() != '{' && text.back() != ',')
    text += ",";
  return text + " ";
}

/// Takes a 4-byte length and that many bytes (fewer at the end) off `in`.
std::string take(const uint8_t *&data, size_t &size) {
  uint32_t n = 0;
  for (int i = 0; i < 4 && size; ++i, ++data, --size)
    n |= uint32_t(*data) << (8 * i);
  size_t k = n < size ? n : size;
  std::string out(reinterpret_cast<const char *>(data), k);
  data += k;
  size -= k;
  return out;
}

void fuzzDirectory(const uint8_t *data, size_t size) {
  const std::string &dir = fuzzTempDir();
  if (dir.empty())
    return;
  std::string index = take(data, size);
  std::string rank0 = take(data, size);
  std::string losses(reinterpret_cast<const char *>(data), size);
  std::string files =
      "\"files\": {" + checkpointFileEntry("rank0.safetensors", rank0);
  if (!losses.empty())
    files += ", " + checkpointFileEntry("losses.npy", losses);
  writeFile(dir + "/model.safetensors.index.json",
            tessel::tooling::sealIndex(indexBody(index) + files + "}, "));
  writeFile(dir + "/rank0.safetensors", rank0);
  const std::string lossesPath = dir + "/losses.npy";
  if (losses.empty())
    ::unlink(lossesPath.c_str());
  else
    writeFile(lossesPath, losses);
  tessel::tooling::SavedStates saved;
  if (saved.read(dir))
    for (const auto &[name, state] : saved.states) {
      // Small states only: put together from their blocks.
      int64_t n = 1;
      for (int64_t d : state.global)
        n = d > 0 && n <= (int64_t(1) << 20) / d ? n * d : (int64_t(1) << 21);
      Tensor t;
      if (n <= (int64_t(1) << 20))
        (void)saved.assemble(name, t);
    }
  std::vector<float> history;
  bool found = false;
  (void)tessel::tooling::readCheckpointLosses(dir, history, found);
}

} // namespace

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
  const char mode = static_cast<char>(data[0]);
  if (mode == 'D') {
    fuzzDirectory(data + 1, size - 1);
    return 0;
  }
  const std::string path = "fuzz/model.safetensors.index.json";
  if (mode == 'R') {
    const std::string raw(reinterpret_cast<const char *>(data) + 1, size - 1);
    (void)tessel::tooling::parseCheckpointIndex(path, raw, info);
    return 0;
  }
  const std::string text(reinterpret_cast<const char *>(data), size);
  (void)tessel::tooling::parseCheckpointIndex(
      path, tessel::tooling::sealIndex(indexBody(text)), info);
  return 0;
}
