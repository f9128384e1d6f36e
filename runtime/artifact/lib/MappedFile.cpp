//===- MappedFile.cpp - Read-only memory-mapped files ---------------------===//
#include "tessel/runtime/MappedFile.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <new>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tessel::runtime {

Status writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return Status::error(path + ": cannot open for writing");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out)
    return Status::error(path + ": write failed");
  return Status::ok();
}

void dropFileBackedPages(const void *data, size_t bytes) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) / page * page;
  if (end > begin)
    madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (base && length)
    munmap(base, length);
}

Status MappedFile::open(const std::string &path,
                        std::shared_ptr<MappedFile> &out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::error(path + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error(path + ": not a regular file");
  }
  std::shared_ptr<MappedFile> f(new MappedFile());
  f->filePath = path;
  f->length = static_cast<size_t>(st.st_size);
  if (f->length) {
    void *p = mmap(nullptr, f->length, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      f->length = 0;
      return Status::error(path + ": mmap failed: " + std::strerror(e));
    }
    f->base = static_cast<unsigned char *>(p);
  }
  ::close(fd);
  out = std::move(f);
  return Status::ok();
}

OwnedBytes::OwnedBytes(size_t size) {
  size_t bytes = (size + 63) / 64 * 64;
  base = static_cast<unsigned char *>(std::aligned_alloc(64, bytes ? bytes : 64));
  if (!base)
    throw std::bad_alloc();
}

OwnedBytes::~OwnedBytes() { std::free(base); }

} // namespace tessel::runtime
