//===- ArtifactDirectory.cpp - Writing an artifact directory whole --------===//
#include "tessel/runtime/ArtifactDirectory.h"

#include "tessel/runtime/Artifact.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

namespace tessel::runtime {

namespace {

bool exists(const std::string &p) {
  struct stat st;
  return ::lstat(p.c_str(), &st) == 0;
}

bool isEmptyDirectory(const std::string &p) {
  DIR *d = ::opendir(p.c_str());
  if (!d)
    return false;
  bool empty = true;
  while (dirent *e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, ".."))
      empty = false;
  ::closedir(d);
  return empty;
}

/// A new name beside `path`: "<path>.<what>-XXXXXX" (6 random hex digits).
std::string besidePath(const std::string &path, const char *what) {
  static std::mt19937_64 rng(std::random_device{}() ^
                             static_cast<uint64_t>(::getpid()));
  char suffix[16];
  std::snprintf(suffix, sizeof(suffix), "%06x",
                static_cast<unsigned>(rng() & 0xffffff));
  return path + "." + what + "-" + suffix;
}

int removeEntry(const char *p, const struct stat *, int flag, struct FTW *) {
  return flag == FTW_DP ? ::rmdir(p) : ::unlink(p);
}

} // namespace

Status removeTree(const std::string &path) {
  if (!exists(path))
    return Status::ok();
  if (::nftw(path.c_str(), removeEntry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    return Status::error(path + ": cannot remove: " + std::strerror(errno));
  return Status::ok();
}

Status ArtifactDirectory::prepare(const std::string &path,
                                  std::unique_ptr<ArtifactDirectory> &out) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      return Status::error(path + ": exists and is not a directory; an "
                                  "artifact is a directory (give a new name, "
                                  "e.g. -o model.tsl)");
    if (!exists(path + "/manifest.pb") && !isEmptyDirectory(path))
      return Status::error(path + ": is a directory that holds no Tessel "
                                  "artifact (no manifest.pb); tesselc does "
                                  "not replace it");
  }
  std::string temp;
  for (int attempt = 0;; ++attempt) {
    temp = besidePath(path, "tmp");
    if (::mkdir(temp.c_str(), 0777) == 0)
      break;
    if (errno != EEXIST || attempt == 8)
      return Status::error(path + ": cannot create the directory " + temp +
                           ": " + std::strerror(errno));
  }
  out.reset(new ArtifactDirectory(path, temp));
  return Status::ok();
}

ArtifactDirectory::~ArtifactDirectory() {
  if (!committed)
    (void)removeTree(temp);
}

Status ArtifactDirectory::commit() {
  // The directory whole: every file beside the ranks' (training.pb,
  // source.onnx, grads/) recorded in the manifest with its CRC-32C.
  if (Status s = recordArtifactFiles(temp); !s)
    return Status::error(path + ": " + s.message());
#ifdef RENAME_EXCHANGE
  // One atomic swap (Linux): no moment without an artifact at `path`.
  if (exists(path)) {
    if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(),
                    RENAME_EXCHANGE) == 0) {
      committed = true;
      if (Status s = removeTree(temp); !s)
        return Status::error(path + ": the previous artifact, moved to " +
                             temp + ", could not be removed: " + s.message());
      return Status::ok();
    }
    // Not supported by this file system: two renames.
  }
#endif
  std::string old;
  if (exists(path)) {
    old = besidePath(path, "old");
    if (std::rename(path.c_str(), old.c_str()) != 0)
      return Status::error(path + ": cannot move the previous artifact "
                                  "aside: " +
                           std::strerror(errno));
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    if (!old.empty())
      (void)std::rename(old.c_str(), path.c_str());
    return Status::error(path + ": cannot move the new artifact in place: " +
                         std::strerror(err));
  }
  committed = true;
  if (!old.empty())
    if (Status s = removeTree(old); !s)
      return Status::error(path + ": the previous artifact, moved to " + old +
                           ", could not be removed: " + s.message());
  return Status::ok();
}

} // namespace tessel::runtime
