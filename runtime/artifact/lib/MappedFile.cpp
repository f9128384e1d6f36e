//===- MappedFile.cpp - Read-only memory-mapped files ---------------------===//
#include "tessel/runtime/MappedFile.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
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

Status writeBytesSynced(const std::string &path, const std::string &bytes) {
  auto failed = [&](const char *what) {
    return Status::error(path + ": " + what + ": " + std::strerror(errno));
  };
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return failed("cannot open for writing");
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      Status s = failed("write failed");
      ::close(fd);
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    Status s = failed("fsync failed");
    ::close(fd);
    return s;
  }
  if (::close(fd) != 0)
    return failed("close failed");
  return Status::ok();
}

Status fsyncDirectory(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return Status::error(dir + ": cannot open: " + std::strerror(errno));
  int rc = ::fsync(fd);
  ::close(fd);
  // Some file systems cannot fsync a directory (EINVAL): nothing to wait for.
  if (rc != 0 && errno != EINVAL)
    return Status::error(dir + ": fsync failed: " + std::strerror(errno));
  return Status::ok();
}

Status writeBytesAtomic(const std::string &path, const std::string &bytes) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  if (Status s = writeBytesSynced(tmp, bytes); !s) {
    ::unlink(tmp.c_str());
    return s;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = Status::error(path + ": rename failed: " + std::strerror(errno));
    ::unlink(tmp.c_str());
    return s;
  }
  // The rename itself: durable once the directory is.
  size_t slash = path.find_last_of('/');
  (void)fsyncDirectory(slash == std::string::npos ? "."
                                                  : path.substr(0, slash + 1));
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
