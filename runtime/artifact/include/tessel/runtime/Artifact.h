//===- Artifact.h - Loading a compiled artifact -----------------*- C++ -*-===//
//
// An artifact is a directory NAME.tsl/ holding manifest.pb, one program file
// per rank and safetensors weight files (runtime/artifact/schema/README.md).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_ARTIFACT_H
#define TESSEL_RUNTIME_ARTIFACT_H

#include "tessel/runtime/MappedFile.h"
#include "tessel/runtime/Status.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace google::protobuf {
class MessageLite;
} // namespace google::protobuf

namespace tessel::artifact {
class Manifest;
class Program;
} // namespace tessel::artifact

namespace tessel::runtime {

class Program;

/// One rank's program as the artifact holds it: the protobuf, and the bytes
/// of weight entry i at weightData[i] (fileBacked[i]: inside a read-only file
/// mapping), kept alive by `keep`.
struct ProgramData {
  std::unique_ptr<artifact::Program> proto;
  std::vector<const void *> weightData;
  std::vector<bool> fileBacked;
  std::vector<std::shared_ptr<Storage>> keep;
  std::string path; // the program file, for messages
};

/// The format version this runtime reads and ArtifactBuilder writes.
constexpr uint32_t kFormatVersion = 1;
/// The largest arena a program may plan (64 TiB): the compiler refuses to
/// write a bigger one, the loader to read it.
constexpr uint64_t kMaxArenaBytes = uint64_t(1) << 46;

struct LoadOptions {
  /// Check the CRC-32C of every file listed in the manifest.
  bool verifyChecksums = true;
};

class Artifact {
public:
  ~Artifact();
  /// Reads and checks `path`/manifest.pb.
  static Status open(const std::string &path, std::unique_ptr<Artifact> &out,
                     const LoadOptions &options = {});

  const std::string &path() const { return dir; }
  const artifact::Manifest &manifest() const { return *man; }
  int numRanks() const;
  std::vector<std::pair<std::string, int64_t>> mesh() const;
  std::string producer() const;

  /// Whether the manifest lists `name` among the artifact's other files
  /// (training.pb, source.onnx, grads/...).
  bool hasFile(const std::string &name) const;
  /// Maps the artifact's file `name` (one the manifest lists among its
  /// other files), checked against its size and CRC-32C (unless
  /// verifyChecksums is off); a file the manifest does not list is an error.
  Status openFile(const std::string &name,
                  std::shared_ptr<MappedFile> &out) const;
  /// Checks every file the manifest lists under `prefix` ("grads/"): each
  /// there, with its size and CRC-32C. The first that differs is an error.
  Status checkFiles(const std::string &prefix) const;

  /// Reads rank `rank`'s program and maps its weights, checking each against
  /// its safetensors header (name, byte range, dtype, shape).
  Status readProgram(int rank, ProgramData &out) const;
  /// readProgram, then validates the program into an executable Program.
  /// Defined by the runtime library (runtime/lib/LoadProgram.cpp): the
  /// artifact library itself knows no executable form.
  Status loadProgram(int rank, std::shared_ptr<const Program> &out) const;

private:
  Artifact();
  std::string dir;
  LoadOptions opts;
  std::unique_ptr<artifact::Manifest> man;
};

/// CRC-32C (Castagnoli) of `size` bytes, continuing from `crc` (0 to start).
uint32_t crc32c(const void *data, size_t size, uint32_t crc = 0);

/// `msg`'s bytes with its map fields in key order (an op's attributes):
/// protobuf orders a map by a hash it seeds per process, so the same
/// compilation would write other bytes, and other checksums, each time.
/// False where it does not serialise (over 2 GB). Every file of an artifact
/// is written so.
bool serializeDeterministic(const google::protobuf::MessageLite &msg,
                            std::string &out);

/// The bytes of manifest.pb for `m`: its serialisation (manifest_crc32c
/// cleared), then manifest_crc32c, the CRC-32C of those bytes, as the last
/// field. Every writer of a manifest writes these (ArtifactBuilder, the
/// directory's seal, tests and fuzzers that edit one).
std::string sealManifest(const artifact::Manifest &m);

/// Seals the artifact directory `dir` once every file is written: records
/// every file beside the manifest and the ranks' files (training.pb,
/// source.onnx, grads/..., one level of subdirectory) with its size and
/// CRC-32C in manifest.pb's `files`. tesselc calls it before the
/// directory takes the artifact's place (tools/tesselc/ArtifactDir.cpp).
Status recordArtifactFiles(const std::string &dir);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_ARTIFACT_H
