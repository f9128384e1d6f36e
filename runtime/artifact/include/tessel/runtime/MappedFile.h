//===- MappedFile.h - Read-only memory-mapped files -------------*- C++ -*-===//
#ifndef TESSEL_RUNTIME_MAPPEDFILE_H
#define TESSEL_RUNTIME_MAPPEDFILE_H

#include "tessel/runtime/Status.h"

#include <memory>
#include <string>

namespace tessel::runtime {

/// A file mapped (or bytes held) for as long as a Program uses it.
struct Storage {
  virtual ~Storage() = default;
};

/// A whole file mapped read-only (PROT_READ, MAP_PRIVATE).
class MappedFile : public Storage {
public:
  ~MappedFile() override;
  static Status open(const std::string &path,
                     std::shared_ptr<MappedFile> &out);
  const unsigned char *data() const { return base; }
  size_t size() const { return length; }
  const std::string &path() const { return filePath; }

private:
  MappedFile() = default;
  unsigned char *base = nullptr;
  size_t length = 0;
  std::string filePath;
};

/// Writes `bytes` to `path` (created, or truncated).
Status writeBytes(const std::string &path, const std::string &bytes);

/// Writes `bytes` to `path` (created, or truncated) and fsyncs the file.
Status writeBytesSynced(const std::string &path, const std::string &bytes);

/// fsyncs the directory `dir` (the entries created or renamed in it).
Status fsyncDirectory(const std::string &dir);

/// Writes `bytes` to `path` atomically: into a temporary file beside it,
/// fsync'ed, then renamed over `path` (and the directory fsync'ed), so a
/// reader sees the old file or the whole new one, never a part.
Status writeBytesAtomic(const std::string &path, const std::string &bytes);

/// Drops the whole pages inside [data, data + bytes) of a read-only file
/// mapping from memory (madvise). Only for BufferInfo::fileBacked data.
void dropFileBackedPages(const void *data, size_t bytes);

/// Bytes held in memory (weights of a program built without files).
class OwnedBytes : public Storage {
public:
  explicit OwnedBytes(size_t size);
  ~OwnedBytes() override;
  unsigned char *data() { return base; }

private:
  unsigned char *base = nullptr;
};

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_MAPPEDFILE_H
