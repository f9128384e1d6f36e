//===- Writable.cpp - Can a file be written? ------------------------------===//
#include "tessel/runtime/Writable.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tessel::runtime {

Status checkWritable(const std::string &what, const std::string &path) {
  struct stat st;
  const bool existed = ::stat(path.c_str(), &st) == 0;
  if (existed && S_ISDIR(st.st_mode))
    return Status::error(what + " " + path +
                         ": cannot be written: it is a directory");
  // No O_TRUNC: an existing file keeps its contents until the real write.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0)
    return Status::error(what + " " + path + ": cannot be written: " +
                         std::strerror(errno));
  ::close(fd);
  if (!existed)
    ::unlink(path.c_str());
  return Status::ok();
}

} // namespace tessel::runtime
