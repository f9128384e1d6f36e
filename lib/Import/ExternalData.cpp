//===- ExternalData.cpp - confining ONNX external data --------------------===//
//
// The rules of ONNX's loader (onnx/checker.cc, resolve_external_data_location)
// after CVE-2022-25882 and CVE-2024-27318 (`..` and absolute locations),
// CVE-2026-27489 (symbolic links) and its refusal of files with several hard
// links: a location is relative, stays inside the model's folder after every
// symbolic link is resolved, and names a regular file with one link.
//
//===----------------------------------------------------------------------===//

#include "ExternalData.h"

#include "tessel/support/Checked.h"

#include "onnx/onnx_pb.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Path.h"

#include <climits>
#include <cstdlib>
#include <sys/stat.h>

using namespace mlir::tessel::detail;

namespace {

/// `path` with every symbolic link resolved, or empty when it does not exist.
std::string realPath(const std::string &path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : std::string();
}

bool isAbsoluteAnywhere(llvm::StringRef loc) {
  // POSIX and Windows spellings alike: "/x", "\x", "C:x", "C:\x".
  return loc.starts_with("/") || loc.starts_with("\\") ||
         (loc.size() >= 2 && loc[1] == ':' && llvm::isAlpha(loc[0]));
}

} // namespace

bool mlir::tessel::detail::resolveExternalData(llvm::StringRef modelDir,
                                               llvm::StringRef tensor,
                                               llvm::StringRef location,
                                               ExternalFile &out,
                                               std::string &error) {
  auto refuse = [&](const llvm::Twine &why) {
    error = ("tensor '" + tensor + "': external data location '" + location +
             "' " + why)
                .str();
    return false;
  };
  if (location.empty()) {
    error = ("tensor '" + tensor + "' has external data without a location")
                .str();
    return false;
  }
  if (location.contains('\0'))
    return refuse("holds a NUL byte");
  if (isAbsoluteAnywhere(location))
    return refuse("is absolute; external data must be a path relative to "
                  "the model's folder");
  for (llvm::StringRef rest = location; !rest.empty();) {
    auto [part, tail] = rest.split('/');
    for (llvm::StringRef piece = part; !piece.empty();) {
      auto [p, t] = piece.split('\\');
      if (p == "..")
        return refuse("has a '..' component; external data must lie in the "
                      "model's folder");
      piece = t;
    }
    rest = tail;
  }

  const std::string dir = modelDir.empty() ? "." : modelDir.str();
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, location);
  out.path = std::string(path);
  struct stat st;
  if (::lstat(out.path.c_str(), &st) != 0) {
    error = ("tensor '" + tensor + "': external data file '" + location +
             "' not found (looked for '" + out.path + "')")
                .str();
    return false;
  }
  if (S_ISLNK(st.st_mode))
    return refuse("is a symbolic link; external data must be a regular file "
                  "in the model's folder");
  // A directory on the way may still be a link out of the folder.
  std::string root = realPath(dir), real = realPath(out.path);
  if (root.empty() || real.empty() ||
      llvm::StringRef(real).substr(0, root.size()) != root ||
      (real.size() > root.size() && root != "/" && real[root.size()] != '/'))
    return refuse("resolves to '" + real + "', outside the model's folder '" +
                  root + "'");
  if (!S_ISREG(st.st_mode))
    return refuse("is not a regular file");
  if (st.st_nlink > 1)
    return refuse("is a file with " + llvm::Twine(uint64_t(st.st_nlink)) +
                  " hard links; external data must have one");
  out.size = uint64_t(st.st_size);
  return true;
}

bool mlir::tessel::detail::locateExternalData(
    llvm::StringRef modelDir, const onnx::TensorProto &t,
    std::optional<uint64_t> expectedBytes, llvm::StringRef what,
    ExternalSlice &out, std::string &error) {
  std::optional<uint64_t> length;
  for (const auto &kv : t.external_data()) {
    if (kv.key() == "location") {
      out.location = kv.value();
    } else if (kv.key() == "offset" || kv.key() == "length") {
      uint64_t v;
      if (!llvm::to_integer(kv.value(), v, 10)) {
        error = (llvm::Twine("tensor '") + t.name() + "': external data " + kv.key() +
                 " '" + kv.value() + "' is not a byte count")
                    .str();
        return false;
      }
      if (kv.key() == "offset")
        out.offset = v;
      else
        length = v;
    }
  }
  if (!resolveExternalData(modelDir, t.name(), out.location, out.file, error))
    return false;
  if (expectedBytes && length && *length != *expectedBytes) {
    error = (llvm::Twine("tensor '") + t.name() + "': external data length " +
             llvm::Twine(*length) + " in '" + out.location +
             "' does not match " + what + " (" + llvm::Twine(*expectedBytes) +
             " bytes)")
                .str();
    return false;
  }
  if (!expectedBytes && !length) {
    error = (llvm::Twine("tensor '") + t.name() + "': external data in '" + out.location +
             "' has no length")
                .str();
    return false;
  }
  out.length = expectedBytes ? *expectedBytes : *length;
  // Never offset + length: an offset near 2^64 wraps it into range.
  if (!::tessel::rangeInside(out.offset, out.length, out.file.size)) {
    error = (llvm::Twine("tensor '") + t.name() + "': external data file '" + out.location +
             "' is too short: offset " + llvm::Twine(out.offset) +
             " and length " + llvm::Twine(out.length) + " lie outside its " +
             llvm::Twine(out.file.size) + " bytes")
                .str();
    return false;
  }
  return true;
}
