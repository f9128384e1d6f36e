//===- Artifact.cpp - Loading a compiled artifact -------------------------===//
#include "tessel/runtime/Artifact.h"

#include "tessel/runtime/MappedFile.h"
#include "tessel/runtime/Safetensors.h"
#include "artifact.pb.h"
#include "tessel/support/Checked.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <dirent.h>
#include <set>
#include <climits>
#include <cstring>
#include <sys/stat.h>

namespace tessel::runtime {

namespace {

bool isSafeName(const std::string &p) {
  return !p.empty() && p.find('/') == std::string::npos && p != "." &&
         p != ".." && p.find('\0') == std::string::npos;
}

/// A path of the manifest's `files`: a safe name, or "SUBDIR/NAME".
bool isSafePath(const std::string &p) {
  size_t slash = p.find('/');
  if (slash == std::string::npos)
    return isSafeName(p);
  return isSafeName(p.substr(0, slash)) && isSafeName(p.substr(slash + 1));
}

/// The tag of manifest_crc32c (field 15, wire type 5: fixed32).
constexpr unsigned char kManifestCrcTag = (15 << 3) | 5;

std::string crcText(uint32_t crc) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%08x", crc);
  return buf;
}

/// Checks manifest.pb's own checksum (sealManifest).
Status checkManifestSeal(const std::string &mpath, const unsigned char *data,
                         size_t size) {
  if (size < 5 || data[size - 5] != kManifestCrcTag)
    return Status::error(mpath + ": no manifest checksum: an artifact written "
                                 "by an older tesselc (recompile it), or a "
                                 "corrupted manifest");
  uint32_t want = 0;
  for (int i = 0; i < 4; ++i)
    want |= uint32_t(data[size - 4 + i]) << (8 * i);
  uint32_t found = crc32c(data, size - 5);
  if (found != want)
    return Status::error(mpath + ": corrupted: its CRC-32C is " +
                         crcText(found) + ", the manifest says " +
                         crcText(want));
  return Status::ok();
}

/// Maps `entry` from the artifact directory and checks size and checksum.
Status mapChecked(const std::string &dir, const artifact::FileEntry &entry,
                  bool verify, std::shared_ptr<MappedFile> &out) {
  if (!isSafePath(entry.path()))
    return Status::error(dir + "/manifest.pb: invalid file name '" +
                         entry.path() + "'");
  std::string path = dir + "/" + entry.path();
  // As ONNX external data (docs/security.md): the files are the folder's
  // own, not links to files elsewhere.
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
    return Status::error(path + ": is a symbolic link; an artifact's files "
                                "must be regular files in its folder");
  TSL_RETURN_IF_ERROR(MappedFile::open(path, out));
  if (out->size() != entry.size())
    return Status::error(path + ": truncated or corrupted: " +
                         std::to_string(out->size()) +
                         " bytes, the manifest says " +
                         std::to_string(entry.size()));
  if (verify) {
    // In 64 MiB pieces, each dropped from memory once summed: the pass
    // reads every page, and a 600 MB weights file must not stay resident
    // (nor peak) for it; kernels fault back in what they touch.
    uint32_t crc = 0;
    const size_t piece = size_t(64) << 20;
    for (size_t off = 0; off < out->size(); off += piece) {
      size_t n = std::min(piece, out->size() - off);
      crc = crc32c(out->data() + off, n, crc);
      dropFileBackedPages(out->data() + off, n);
    }
    if (crc != entry.crc32c())
      return Status::error(path + ": corrupted: its CRC-32C is " +
                           crcText(crc) + ", the manifest says " +
                           crcText(entry.crc32c()));
  }
  return Status::ok();
}

} // namespace

Artifact::Artifact() : man(std::make_unique<artifact::Manifest>()) {}
Artifact::~Artifact() = default;

Status Artifact::open(const std::string &path, std::unique_ptr<Artifact> &out,
                      const LoadOptions &options) {
  std::string dir = path;
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  std::string mpath = dir + "/manifest.pb";
  std::shared_ptr<MappedFile> file;
  Status s = MappedFile::open(mpath, file);
  if (!s)
    return Status::error(dir + ": not a Tessel artifact directory (" +
                         s.message() + ")");
  TSL_RETURN_IF_ERROR(checkManifestSeal(mpath, file->data(), file->size()));
  std::unique_ptr<Artifact> a(new Artifact());
  a->dir = dir;
  a->opts = options;
  if (file->size() > INT_MAX ||
      !a->man->ParseFromArray(file->data(), static_cast<int>(file->size())))
    return Status::error(mpath + ": corrupted or truncated (not a valid "
                                 "Manifest protobuf)");
  const artifact::Manifest &m = *a->man;
  if (m.format_version() != kFormatVersion)
    return Status::error(mpath + ": unsupported format_version " +
                         std::to_string(m.format_version()) +
                         " (this runtime reads " +
                         std::to_string(kFormatVersion) + ")");
  if (m.num_ranks() < 1 || m.ranks_size() != m.num_ranks())
    return Status::error(mpath + ": num_ranks is " +
                         std::to_string(m.num_ranks()) + " but " +
                         std::to_string(m.ranks_size()) +
                         " rank entries are listed");
  std::vector<int64_t> sizes;
  for (const auto &axis : m.mesh()) {
    if (axis.size() < 1 || axis.size() > (1 << 20))
      return Status::error(mpath + ": mesh axis '" + axis.name() +
                           "' has invalid size " + std::to_string(axis.size()));
    sizes.push_back(axis.size());
  }
  std::optional<int64_t> devices = checkedProduct(sizes, int64_t(1) << 24);
  if (!devices)
    return Status::error(mpath + ": the mesh " + shapeToString(sizes) +
                         " has more than " + std::to_string(1 << 24) +
                         " devices");
  const int64_t meshSize = *devices;
  if (meshSize != m.num_ranks())
    return Status::error(mpath + ": the mesh has " + std::to_string(meshSize) +
                         " devices but num_ranks is " +
                         std::to_string(m.num_ranks()));
  for (int i = 0; i < m.ranks_size(); ++i) {
    const auto &r = m.ranks(i);
    if (r.rank() != i)
      return Status::error(mpath + ": rank entry " + std::to_string(i) +
                           " says rank " + std::to_string(r.rank()));
    if (!isSafeName(r.program().path()))
      return Status::error(mpath + ": rank " + std::to_string(i) +
                           ": invalid program file name '" +
                           r.program().path() + "'");
    for (const auto &w : r.weights())
      if (!isSafeName(w.path()))
        return Status::error(mpath + ": rank " + std::to_string(i) +
                             ": invalid weights file name '" + w.path() + "'");
  }
  for (const auto &f : m.files())
    if (!isSafePath(f.path()))
      return Status::error(mpath + ": invalid file name '" + f.path() + "'");
  out = std::move(a);
  return Status::ok();
}

int Artifact::numRanks() const { return man->num_ranks(); }

bool Artifact::hasFile(const std::string &name) const {
  for (const auto &f : man->files())
    if (f.path() == name)
      return true;
  return false;
}

Status Artifact::openFile(const std::string &name,
                          std::shared_ptr<MappedFile> &out) const {
  for (const auto &f : man->files())
    if (f.path() == name)
      return mapChecked(dir, f, opts.verifyChecksums, out);
  return Status::error(dir + "/" + name + ": not listed in " + dir +
                       "/manifest.pb (an artifact written by an older "
                       "tesselc: recompile it)");
}

Status Artifact::checkFiles(const std::string &prefix) const {
  for (const auto &f : man->files())
    if (f.path().compare(0, prefix.size(), prefix) == 0) {
      std::shared_ptr<MappedFile> mapped;
      TSL_RETURN_IF_ERROR(mapChecked(dir, f, opts.verifyChecksums, mapped));
    }
  return Status::ok();
}

bool serializeDeterministic(const google::protobuf::MessageLite &msg,
                            std::string &out) {
  out.clear();
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  return msg.SerializeToCodedStream(&coded) && !coded.HadError();
}

std::string sealManifest(const artifact::Manifest &m) {
  artifact::Manifest copy = m;
  copy.clear_manifest_crc32c();
  std::string bytes;
  serializeDeterministic(copy, bytes);
  uint32_t crc = crc32c(bytes.data(), bytes.size());
  bytes += static_cast<char>(kManifestCrcTag);
  for (int i = 0; i < 4; ++i)
    bytes += static_cast<char>((crc >> (8 * i)) & 0xff);
  return bytes;
}

Status recordArtifactFiles(const std::string &dirArg) {
  std::unique_ptr<Artifact> a;
  LoadOptions lo;
  lo.verifyChecksums = false;
  TSL_RETURN_IF_ERROR(Artifact::open(dirArg, a, lo));
  const std::string &dir = a->path();
  artifact::Manifest m = a->manifest();
  std::set<std::string> listed = {"manifest.pb"};
  for (const auto &r : m.ranks()) {
    listed.insert(r.program().path());
    for (const auto &w : r.weights())
      listed.insert(w.path());
  }
  m.clear_files();
  // The directory's other files, and those of its subdirectories, sorted.
  std::vector<std::string> names;
  auto list = [](const std::string &path, std::vector<std::string> &out,
                 std::vector<std::string> *subdirs) -> Status {
    DIR *d = ::opendir(path.c_str());
    if (!d)
      return Status::error(path + ": cannot list: " + std::strerror(errno));
    while (dirent *e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..")
        continue;
      struct stat st;
      if (::lstat((path + "/" + name).c_str(), &st) != 0)
        continue;
      if (S_ISDIR(st.st_mode) && subdirs)
        subdirs->push_back(name);
      else
        out.push_back(name);
    }
    ::closedir(d);
    return Status::ok();
  };
  std::vector<std::string> subdirs;
  TSL_RETURN_IF_ERROR(list(dir, names, &subdirs));
  for (const std::string &sub : subdirs) {
    std::vector<std::string> inner;
    TSL_RETURN_IF_ERROR(list(dir + "/" + sub, inner, nullptr));
    for (const std::string &n : inner)
      names.push_back(sub + "/" + n);
  }
  std::sort(names.begin(), names.end());
  for (const std::string &name : names) {
    if (listed.count(name))
      continue;
    if (!isSafePath(name))
      return Status::error(dir + "/" + name + ": not a file an artifact may "
                                              "hold (a subdirectory of a "
                                              "subdirectory?)");
    std::shared_ptr<MappedFile> f;
    TSL_RETURN_IF_ERROR(MappedFile::open(dir + "/" + name, f));
    artifact::FileEntry *e = m.add_files();
    e->set_path(name);
    e->set_size(f->size());
    e->set_crc32c(crc32c(f->data(), f->size()));
  }
  return writeBytesSynced(dir + "/manifest.pb", sealManifest(m));
}

std::string Artifact::producer() const { return man->producer(); }

std::vector<std::pair<std::string, int64_t>> Artifact::mesh() const {
  std::vector<std::pair<std::string, int64_t>> r;
  for (const auto &a : man->mesh())
    r.emplace_back(a.name(), a.size());
  return r;
}

Status Artifact::readProgram(int rank, ProgramData &out) const {
  if (rank < 0 || rank >= numRanks())
    return Status::error(dir + ": rank " + std::to_string(rank) +
                         " does not exist (the artifact has " +
                         std::to_string(numRanks()) + " ranks)");
  const artifact::RankEntry &entry = man->ranks(rank);
  std::shared_ptr<MappedFile> progFile;
  TSL_RETURN_IF_ERROR(
      mapChecked(dir, entry.program(), opts.verifyChecksums, progFile));
  std::string ppath = progFile->path();
  out.proto = std::make_unique<artifact::Program>();
  artifact::Program &proto = *out.proto;
  if (progFile->size() > INT_MAX ||
      !proto.ParseFromArray(progFile->data(),
                            static_cast<int>(progFile->size())))
    return Status::error(ppath + ": corrupted or truncated (not a valid "
                                 "Program protobuf)");
  if (proto.rank() != rank)
    return Status::error(ppath + ": holds the program of rank " +
                         std::to_string(proto.rank()) + ", expected " +
                         std::to_string(rank));

  std::vector<std::shared_ptr<Storage>> &keep = out.keep;
  std::vector<std::shared_ptr<MappedFile>> files;
  std::vector<SafetensorsIndex> indices;
  for (const auto &w : entry.weights()) {
    std::shared_ptr<MappedFile> f;
    TSL_RETURN_IF_ERROR(mapChecked(dir, w, opts.verifyChecksums, f));
    SafetensorsIndex idx;
    TSL_RETURN_IF_ERROR(parseSafetensors(f->data(), f->size(), f->path(), idx));
    files.push_back(f);
    keep.push_back(f);
    indices.push_back(std::move(idx));
  }

  std::vector<const void *> &data = out.weightData;
  std::vector<bool> &fileBacked = out.fileBacked;
  for (int i = 0; i < proto.weights_size(); ++i) {
    const artifact::Weight &w = proto.weights(i);
    std::string ww = ppath + ": weight '" + w.name() + "'";
    if (w.file() < 0 || w.file() >= static_cast<int>(files.size()))
      return Status::error(ww + ": weights file index " +
                           std::to_string(w.file()) + " does not exist");
    const SafetensorsIndex &idx = indices[w.file()];
    const std::string &fpath = files[w.file()]->path();
    auto it = idx.tensors.find(w.name());
    if (it == idx.tensors.end())
      return Status::error(ww + ": not found in " + fpath);
    const SafetensorsEntry &e = it->second;
    if (e.begin != w.begin() || e.end != w.end())
      return Status::error(ww + ": the program says bytes [" +
                           std::to_string(w.begin()) + ", " +
                           std::to_string(w.end()) + "), " + fpath + " says [" +
                           std::to_string(e.begin) + ", " +
                           std::to_string(e.end) + ")");
    if (w.buffer() < 0 || w.buffer() >= proto.buffers_size())
      return Status::error(ww + ": buffer " + std::to_string(w.buffer()) +
                           " does not exist");
    const artifact::Buffer &b = proto.buffers(w.buffer());
    Shape bshape(b.shape().begin(), b.shape().end());
    if (static_cast<int>(e.dtype) != b.dtype() || e.shape != bshape)
      return Status::error(
          ww + ": " + fpath + " holds " + dtypeName(e.dtype) + " " +
          shapeToString(e.shape) + ", the buffer is " +
          (isValidDType(b.dtype()) ? dtypeName(static_cast<DType>(b.dtype()))
                                   : "?") +
          " " + shapeToString(bshape));
    const unsigned char *ptr = files[w.file()]->data() + idx.dataStart + e.begin;
    size_t bytes = e.end - e.begin;
    if (reinterpret_cast<uintptr_t>(ptr) % dtypeSize(e.dtype)) {
      auto copy = std::make_shared<OwnedBytes>(bytes);
      std::memcpy(copy->data(), ptr, bytes);
      ptr = copy->data();
      keep.push_back(copy);
      fileBacked.push_back(false);
    } else {
      fileBacked.push_back(true);
    }
    data.push_back(ptr);
  }
  out.path = ppath;
  return Status::ok();
}

} // namespace tessel::runtime
