//===- Writable.cpp - tesselc: can a file be written? ---------------------===//
#include "Writable.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Process.h"

using namespace llvm;

std::string tessel::unwritable(StringRef flag, StringRef path) {
  if (sys::fs::is_directory(path))
    return (flag + " " + path + ": cannot be written: it is a directory").str();
  const bool existed = sys::fs::exists(path);
  int fd;
  if (std::error_code ec = sys::fs::openFileForWrite(
          path, fd, sys::fs::CD_OpenAlways, sys::fs::OF_None))
    return (flag + " " + path + ": cannot be written: " + ec.message()).str();
  (void)sys::Process::SafelyCloseFileDescriptor(fd);
  if (!existed)
    (void)sys::fs::remove(path);
  return "";
}
