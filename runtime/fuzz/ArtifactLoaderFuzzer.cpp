//===- ArtifactLoaderFuzzer.cpp - libFuzzer target for the loader ---------===//
//
// The input is split into a program file and a safetensors weights file
// (the first 4 bytes give the program's length); both are written into an
// artifact directory whose manifest matches their sizes (checksums off), then
// loaded. An input that starts with "MANI" is a manifest instead: parsed as
// a Manifest, sealed with its checksum (sealManifest) as tesselc writes it,
// and opened with every file it lists (ranks' and others') checked. A program that validates is executed once on zero inputs when it
// is small. Any crash, leak or sanitizer report is a bug: the loader must
// answer every input with a Status.
//
//===----------------------------------------------------------------------===//
#include "FuzzTempDir.h"
#include "artifact.pb.h"
#include "tessel/runtime/Runtime.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>
#include <sys/stat.h>
#include <unistd.h>

using namespace tessel::runtime;

namespace {

void writeFile(const std::string &path, const uint8_t *data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(data), static_cast<std::streamsize>(size));
}

/// The manifest case: every rank's program and every listed file, opened
/// from a directory holding only the manifest (each one missing: an error).
void fuzzManifest(const uint8_t *data, size_t size) {
  tessel::artifact::Manifest m;
  if (!m.ParseFromArray(data, static_cast<int>(size)))
    return;
  const std::string &dir = fuzzTempDir();
  for (const char *f : {"rank0.program.pb", "rank0.weights.safetensors"})
    ::unlink((dir + "/" + f).c_str());
  std::string mbytes = sealManifest(m);
  writeFile(dir + "/manifest.pb",
            reinterpret_cast<const uint8_t *>(mbytes.data()), mbytes.size());
  std::unique_ptr<Artifact> a;
  if (!Artifact::open(dir, a))
    return;
  for (int r = 0; r < a->numRanks() && r < 4; ++r) {
    ProgramData p;
    (void)a->readProgram(r, p);
  }
  for (const auto &f : a->manifest().files()) {
    std::shared_ptr<MappedFile> mapped;
    (void)a->openFile(f.path(), mapped);
  }
  (void)a->checkFiles("grads/");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size >= 4 && std::memcmp(data, "MANI", 4) == 0) {
    fuzzManifest(data + 4, size - 4);
    return 0;
  }
  if (size < 4)
    return 0;
  uint32_t progLen;
  std::memcpy(&progLen, data, 4);
  data += 4;
  size -= 4;
  progLen = static_cast<uint32_t>(std::min<size_t>(progLen, size));
  const std::string &dir = fuzzTempDir();
  writeFile(dir + "/rank0.program.pb", data, progLen);
  writeFile(dir + "/rank0.weights.safetensors", data + progLen, size - progLen);

  tessel::artifact::Manifest m;
  m.set_format_version(kFormatVersion);
  m.set_num_ranks(1);
  auto *r = m.add_ranks();
  r->mutable_program()->set_path("rank0.program.pb");
  r->mutable_program()->set_size(progLen);
  auto *w = r->add_weights();
  w->set_path("rank0.weights.safetensors");
  w->set_size(size - progLen);
  std::string mbytes = sealManifest(m);
  writeFile(dir + "/manifest.pb", reinterpret_cast<const uint8_t *>(mbytes.data()),
            mbytes.size());

  std::unique_ptr<Artifact> a;
  LoadOptions o;
  o.verifyChecksums = false;
  if (!Artifact::open(dir, a, o))
    return 0;
  std::shared_ptr<const Program> p;
  if (!a->loadProgram(0, p))
    return 0;
  // Execute small programs once (inputs are zero).
  int64_t elements = 0;
  for (const BufferInfo &b : p->buffers)
    elements += b.numel;
  if (p->arenaSize > (1u << 20) || elements > (1 << 16) || p->ops.size() > 64)
    return 0;
  std::unique_ptr<Executor> e;
  if (createExecutor("cpu", p, {}, e))
    (void)e->run();
  return 0;
}
