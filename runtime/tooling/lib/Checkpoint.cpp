//===- Checkpoint.cpp - tessel-run's training checkpoints -----------------===//
#include "tessel/tooling/Checkpoint.h"
#include "tessel/tooling/Launch.h"

#include "tessel/runtime/Artifact.h"
#include "tessel/runtime/ArtifactDirectory.h"
#include "tessel/runtime/Json.h"
#include "tessel/runtime/MappedFile.h"
#include "tessel/runtime/Npy.h"
#include "tessel/runtime/Safetensors.h"
#include "tessel/tooling/StateBlocks.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <set>
#include <utility>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace tessel::runtime;

namespace tessel::tooling {

namespace {

const char kIndex[] = "model.safetensors.index.json";
/// Every step's loss from the training's first (CheckpointInfo::losses).
const char kLosses[] = "losses.npy";

std::string rankFile(int rank) {
  return "rank" + std::to_string(rank) + ".safetensors";
}

bool exists(const std::string &path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

bool isDir(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

/// "a/b/ckpt" -> ("a/b", "ckpt"); trailing slashes dropped.
std::pair<std::string, std::string> splitPath(std::string p) {
  while (p.size() > 1 && p.back() == '/')
    p.pop_back();
  size_t slash = p.find_last_of('/');
  if (slash == std::string::npos)
    return {".", p};
  return {slash == 0 ? "/" : p.substr(0, slash), p.substr(slash + 1)};
}

/// The non-empty entries of `parts`, joined by commas.
std::string joinNonEmpty(const std::vector<std::string> &parts) {
  std::string out;
  for (const std::string &p : parts)
    if (!p.empty())
      out += (out.empty() ? "" : ",") + p;
  return out;
}

std::string trimmed(std::string p) {
  while (p.size() > 1 && p.back() == '/')
    p.pop_back();
  return p;
}

Status sysError(const std::string &what) {
  return Status::error(what + ": " + std::strerror(errno));
}

Status makeDirs(const std::string &dir) {
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos < dir.size() && dir[pos] != '/')
      continue;
    std::string part = dir.substr(0, pos);
    if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST)
      return sysError(part + ": cannot create directory");
  }
  if (!isDir(dir))
    return Status::error(dir + ": not a directory");
  return Status::ok();
}

Status renamePath(const std::string &from, const std::string &to) {
  if (std::rename(from.c_str(), to.c_str()) != 0)
    return sysError("cannot rename " + from + " to " + to);
  return Status::ok();
}


/// The index's own checksum: the text ends with `"index_crc32c": "XXXXXXXX"}`
/// and a newline, XXXXXXXX the CRC-32C (hex) of every byte before its
/// opening quote (sealIndex), so that any change to the index is caught.
const char kIndexCrcKey[] = "\"index_crc32c\": ";
/// Older checkpoints had no checksums: refused with this.
const char kOlderCheckpoint[] =
    "a checkpoint written by an older tessel-run (no checksums): resume it "
    "with the tessel-run that wrote it, or train again";

std::string hex8(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%08x", v);
  return buf;
}

/// What the index says: its metadata (integers), weight_map, layout and the
/// checksums of the checkpoint's files.
struct Index {
  std::map<std::string, int64_t> metadata;
  std::map<std::string, std::string> weightMap;
  /// "layout": key -> (global shape, offset) of the block the key names.
  std::map<std::string, std::pair<Shape, std::vector<int64_t>>> layout;
  struct FileSum {
    uint64_t size = 0;
    uint32_t crc = 0;
  };
  /// "files": every file of the checkpoint but the index, by name.
  std::map<std::string, FileSum> files;
};

/// Checks the index's own checksum (sealIndex); its JSON is the whole text.
Status checkIndexSeal(const std::string &path, const std::string &text) {
  const std::string key = kIndexCrcKey;
  // ... "index_crc32c": "XXXXXXXX"}\n
  const size_t tail = 1 + 8 + 3;
  if (text.size() < key.size() + tail ||
      text.compare(text.size() - tail - key.size(), key.size(), key) != 0)
    return Status::error(path + ": " + kOlderCheckpoint +
                         ", or a corrupted index (it does not end with its "
                         "checksum)");
  const size_t q = text.size() - tail;
  if (text[q] != '"' || text.compare(q + 9, 3, "\"}\n") != 0)
    return Status::error(path + ": corrupted: the index's checksum is "
                                "malformed");
  uint32_t want = 0;
  for (size_t i = q + 1; i < q + 9; ++i) {
    char c = text[i];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                   : -1;
    if (d < 0)
      return Status::error(path + ": corrupted: the index's checksum is "
                                  "malformed");
    want = want << 4 | static_cast<uint32_t>(d);
  }
  uint32_t found = crc32c(text.data(), q);
  if (found != want)
    return Status::error(path + ": corrupted: its CRC-32C is " + hex8(found) +
                         ", the index says " + hex8(want));
  return Status::ok();
}

/// `text`, the JSON of an index, into `out`; an error says what is wrong
/// with it (the caller names the file).
Status parseIndexJson(const std::string &text, Index &out) {
  auto bad = [](const std::string &m) { return Status::error(m); };
  Json root;
  std::string why;
  if (!parseJson(text, root, why, 64))
    return bad(why);
  if (root.kind != Json::Object)
    return bad("the index is not a JSON object");
  auto intList = [&](const Json *v, std::vector<int64_t> &list) {
    if (!v || v->kind != Json::Array)
      return false;
    for (const Json &d : v->items) {
      if (!d.isInteger || d.integer > (uint64_t(1) << 62))
        return false;
      list.push_back(static_cast<int64_t>(d.integer));
    }
    return true;
  };
  for (const auto &[key, v] : root.members) {
    if (key == "metadata" && v.kind == Json::Object) {
      for (const auto &[k, m] : v.members)
        if (m.isInteger && m.integer <= (uint64_t(1) << 62))
          out.metadata[k] = static_cast<int64_t>(m.integer);
    } else if (key == "weight_map" && v.kind == Json::Object) {
      for (const auto &[k, m] : v.members) {
        if (m.kind != Json::String)
          return bad("weight_map: '" + k + "' is not a file name");
        out.weightMap[k] = m.str;
      }
    } else if (key == "layout" && v.kind == Json::Object) {
      for (const auto &[k, m] : v.members) {
        auto &entry = out.layout[k];
        if (m.kind != Json::Object ||
            !intList(m.find("global_shape"), entry.first) ||
            !intList(m.find("offset"), entry.second) ||
            entry.first.size() != entry.second.size())
          return bad("layout of '" + k +
                     "' needs global_shape and offset of one length");
      }
    } else if (key == "files" && v.kind == Json::Object) {
      for (const auto &[k, m] : v.members) {
        const Json *size = m.find("size"), *crc = m.find("crc32c");
        if (m.kind != Json::Object || !size || !size->isInteger || !crc ||
            !crc->isInteger || crc->integer > 0xffffffffu)
          return bad("files: '" + k + "' needs an integer size and crc32c");
        out.files[k] = {size->integer, static_cast<uint32_t>(crc->integer)};
      }
    } else if (key == "metadata" || key == "weight_map" || key == "layout" ||
               key == "files") {
      return bad(key + " is not an object");
    }
  }
  return Status::ok();
}

/// A checkpoint's files are the folder's own (docs/security.md): a symbolic
/// link, which could point anywhere, is refused, as in artifacts.
Status openOwnFile(const std::string &path, std::shared_ptr<MappedFile> &f) {
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
    return Status::error(path + ": is a symbolic link; a checkpoint's files "
                                "must be regular files in its folder");
  return MappedFile::open(path, f);
}

Status readWhole(const std::string &path, std::string &out) {
  std::shared_ptr<MappedFile> f;
  TSL_RETURN_IF_ERROR(openOwnFile(path, f));
  out.assign(reinterpret_cast<const char *>(f->data()), f->size());
  return Status::ok();
}

/// The index's text, as read from `path`, into `index` and `info`.
Status parseIndexText(const std::string &path, const std::string &text,
                      Index &index, CheckpointInfo &info) {
  TSL_RETURN_IF_ERROR(checkIndexSeal(path, text));
  Index q;
  if (Status s = parseIndexJson(text, q); !s)
    return Status::error(path + ": corrupt index: " + s.message());
  for (const char *key : {"step", "data_position", "ranks"})
    if (!q.metadata.count(key))
      return Status::error(path + ": corrupt index: metadata has no integer '" +
                           key + "'");
  info.step = q.metadata["step"];
  info.dataPosition = q.metadata["data_position"];
  int64_t ranks = q.metadata["ranks"];
  if (ranks < 1 || ranks > 1 << 20)
    return Status::error(path + ": corrupt index: bad step, data_position or "
                         "ranks");
  info.ranks = static_cast<int>(ranks);
  index = std::move(q);
  return Status::ok();
}

Status parseIndex(const std::string &dir, Index &index, CheckpointInfo &info) {
  const std::string path = dir + "/" + kIndex;
  std::string text;
  if (!exists(path))
    return Status::error(dir + ": not a checkpoint (no " + kIndex + ")");
  TSL_RETURN_IF_ERROR(readWhole(path, text));
  return parseIndexText(path, text, index, info);
}

/// Maps `dir`/`name`, checked against the index's size and CRC-32C of it:
/// a file the index does not list, or that differs, is an error naming the
/// file, what differs, what the index says and what was found.
Status openListed(const std::string &dir, const Index &index,
                  const std::string &name, std::shared_ptr<MappedFile> &f) {
  const std::string path = dir + "/" + name;
  auto it = index.files.find(name);
  if (it == index.files.end())
    return Status::error(path + ": corrupt checkpoint: the index lists no "
                                "checksum of this file");
  TSL_RETURN_IF_ERROR(openOwnFile(path, f));
  if (f->size() != it->second.size)
    return Status::error(path + ": corrupted: its size is " +
                         std::to_string(f->size()) + " bytes, the index says " +
                         std::to_string(it->second.size));
  uint32_t crc = crc32c(f->data(), f->size());
  if (crc != it->second.crc)
    return Status::error(path + ": corrupted: its CRC-32C is " + hex8(crc) +
                         ", the index says " + hex8(it->second.crc));
  return Status::ok();
}

} // namespace

void saveKillHook(const char *phase, int64_t step) {
#ifdef TESSEL_RUN_TEST_HOOKS
  const char *v = std::getenv("TESSEL_TEST_SAVE_KILL");
  if (!v)
    return;
  std::string want = std::string(phase) + "@" + std::to_string(step);
  if (want == v)
    killForTest();
#else
  (void)phase;
  (void)step;
#endif
}

Status removeCheckpointDir(const std::string &dir) {
  return removeTree(trimmed(dir));
}

Status recoverCheckpointDir(const std::string &dirArg, bool forSave) {
  const std::string dir = trimmed(dirArg);
  auto [parent, base] = splitPath(dir);
  const std::string old = dir + ".old", tmpPrefix = base + ".tmp-";
  if (DIR *d = ::opendir(parent.c_str())) {
    std::vector<std::string> leftovers;
    while (dirent *e = ::readdir(d))
      if (std::strncmp(e->d_name, tmpPrefix.c_str(), tmpPrefix.size()) == 0)
        leftovers.push_back(e->d_name);
    ::closedir(d);
    for (const std::string &name : leftovers) {
      std::string path = parent + "/" + name;
      TSL_RETURN_IF_ERROR(removeTree(path));
      std::fprintf(stderr,
                   "tessel-run: removed %s, an unfinished checkpoint save\n",
                   path.c_str());
    }
  }
  if (exists(old)) {
    if (!exists(dir)) {
      TSL_RETURN_IF_ERROR(renamePath(old, dir));
      TSL_RETURN_IF_ERROR(fsyncDirectory(parent));
      std::fprintf(stderr,
                   "tessel-run: restored %s from %s (a save was interrupted)\n",
                   dir.c_str(), old.c_str());
    } else {
      TSL_RETURN_IF_ERROR(removeTree(old));
      std::fprintf(stderr, "tessel-run: removed %s, a replaced checkpoint\n",
                   old.c_str());
    }
  }
  if (forSave && exists(dir)) {
    if (!isDir(dir))
      return Status::error("--save " + dirArg + ": exists and is not a "
                           "directory");
    if (!exists(dir + "/" + kIndex)) {
      bool empty = true;
      if (DIR *d = ::opendir(dir.c_str())) {
        while (dirent *e = ::readdir(d))
          if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, ".."))
            empty = false;
        ::closedir(d);
      }
      if (!empty)
        return Status::error("--save " + dirArg +
                             ": exists and is not a checkpoint (no " + kIndex +
                             "); a save would replace it: remove it or pick "
                             "another directory");
    }
  }
  return Status::ok();
}

namespace {

/// Rank 0's end of a save: the index of every rank's entries (weight map,
/// layout, files' sums) into `tmp`, then the swap of `tmp` for `dir` (the
/// previous checkpoint stays until the new one is in place).
Status commitCheckpoint(const std::string &dir, const std::string &tmp,
                        const CheckpointInfo &info, int ranks, uint64_t bytes,
                        const std::vector<std::string> &weightMaps,
                        const std::vector<std::string> &layouts,
                        const std::vector<std::string> &fileSums) {
  const std::string parent = splitPath(dir).first;
  // The index: every rank's names.
  std::string json = "{\n  \"metadata\": {\"format\": \"tessel-checkpoint\", "
                     "\"step\": " +
                     std::to_string(info.step) +
                     ", \"data_position\": " +
                     std::to_string(info.dataPosition) +
                     ", \"ranks\": " + std::to_string(ranks) +
                     ", \"total_size\": " + std::to_string(bytes) +
                     "},\n  \"weight_map\": {";
  json += joinNonEmpty(weightMaps) + "\n  },\n  \"layout\": {" +
          joinNonEmpty(layouts) + "\n  },\n  \"files\": {";
  for (int r = 0; r < ranks; ++r)
    json += (r ? ",\n    " : "\n    ") + fileSums[r];
  json += "\n  },\n  ";
  TSL_RETURN_IF_ERROR(writeBytesSynced(tmp + "/" + kIndex, sealIndex(json)));
  TSL_RETURN_IF_ERROR(fsyncDirectory(tmp));
  // The swap: the previous checkpoint stays until the new one is in place.
  const std::string old = dir + ".old";
  TSL_RETURN_IF_ERROR(removeTree(old));
  bool hadOld = false;
  if (exists(dir)) {
    TSL_RETURN_IF_ERROR(renamePath(dir, old));
    TSL_RETURN_IF_ERROR(fsyncDirectory(parent));
    hadOld = true;
    saveKillHook("swap", info.step);
  }
  TSL_RETURN_IF_ERROR(renamePath(tmp, dir));
  TSL_RETURN_IF_ERROR(fsyncDirectory(parent));
  saveKillHook("cleanup", info.step);
  if (hadOld)
    TSL_RETURN_IF_ERROR(removeTree(old));
  return Status::ok();
}

} // namespace

Status saveCheckpoint(Executor &exec, const std::string &dirArg,
                      const CheckpointInfo &info, CheckpointGroup &g) {
  const std::string dir = trimmed(dirArg);
  auto [parent, base] = splitPath(dir);
  const bool multi = g.size > 1;
  // The store's keys of this save: its step and how many saves this
  // group made before (every rank makes the same saves in the same
  // order), so that two saves of one step (a --save-every checkpoint and an
  // evaluation's temporary one) never read each other's entries.
  const std::string saveKey =
      std::to_string(info.step) + "." + std::to_string(g.saves++);
  // The temporary directory, made by rank 0, its name shared.
  std::string tmp;
  if (g.rank == 0) {
    tmp = dir + ".tmp-" + std::to_string(::getpid());
    TSL_RETURN_IF_ERROR(makeDirs(parent));
    TSL_RETURN_IF_ERROR(removeTree(tmp));
    if (::mkdir(tmp.c_str(), 0755) != 0)
      return sysError(tmp + ": cannot create directory");
    if (multi)
      TSL_RETURN_IF_ERROR(
          g.store->set("tessel-run/ckpt/" + saveKey, tmp));
  } else {
    TSL_RETURN_IF_ERROR(g.store->get(
        "tessel-run/ckpt/" + saveKey, tmp, g.timeout));
  }

  // This rank's states, streamed into its file one at a time (never a
  // second copy of them all).
  const Program &p = exec.program();
  std::vector<SafetensorsSource> tensors;
  uint64_t bytes = 0;
  for (const auto &[name, id] : p.states) {
    const BufferInfo &b = p.buffers[id];
    bytes += b.bytes;
    tensors.push_back({name, b.dtype, b.shape,
                       [&exec, name = name](const ByteSink &sink) -> Status {
                         Tensor value;
                         TSL_RETURN_IF_ERROR(exec.getState(name, value));
                         return sink(value.data(),
                                     static_cast<size_t>(value.numElements()) *
                                         dtypeSize(value.dtype()));
                       }});
  }
  // The rank file says where the training stands too: checked against the
  // index on load.
  WrittenFile written;
  TSL_RETURN_IF_ERROR(writeSafetensors(
      tmp + "/" + rankFile(g.rank), tensors,
      {{"step", std::to_string(info.step)},
       {"data_position", std::to_string(info.dataPosition)}},
      /*sync=*/true, written));
  // The size and CRC-32C of each file this rank wrote, for the index.
  std::string sums =
      checkpointFileEntry(rankFile(g.rank), written.size, written.crc32c);
  if (info.losses && static_cast<int64_t>(info.losses->size()) == info.step) {
    const std::string npy = encodeNpy(
        Tensor::fromVector(DType::F32, {info.step}, *info.losses));
    TSL_RETURN_IF_ERROR(writeBytesSynced(tmp + "/" + kLosses, npy));
    sums += ",\n    " + checkpointFileEntry(kLosses, npy);
  }
  saveKillHook("write", info.step);
  // Where each block lies in its whole state, for rank 0's index.
  std::string layout;
  for (const auto &[name, id] : p.states) {
    const BufferInfo &b = p.buffers[id];
    if (!b.hasLayout)
      continue;
    auto list = [](const std::vector<int64_t> &v) {
      std::string out = "[";
      for (size_t i = 0; i < v.size(); ++i)
        out += (i ? ", " : "") + std::to_string(v[i]);
      return out + "]";
    };
    layout += (layout.empty() ? "\n    " : ",\n    ") +
              jsonQuote(multi ? "rank" + std::to_string(g.rank) + "/" + name
                              : name) +
              ": {\"global_shape\": " + list(b.globalShape) +
              ", \"offset\": " + list(b.globalOffset) + "}";
  }
  // This rank's entries of the index's weight_map: ranks hold different
  // states in a pipeline (each stage its own).
  std::string names;
  for (const auto &[name, id] : p.states)
    names += (names.empty() ? "\n    " : ",\n    ") +
             jsonQuote(multi ? "rank" + std::to_string(g.rank) + "/" + name
                             : name) +
             ": " + jsonQuote(rankFile(g.rank));
  std::vector<std::string> layouts(g.size), weightMaps(g.size),
      fileSums(g.size);
  layouts[g.rank] = layout;
  weightMaps[g.rank] = names;
  fileSums[g.rank] = sums;
  if (multi) {
    const std::string key =
        "tessel-run/ckpt-layout/" + saveKey + "/";
    const std::string namesKey =
        "tessel-run/ckpt-names/" + saveKey + "/";
    TSL_RETURN_IF_ERROR(g.store->set(key + std::to_string(g.rank), layout));
    const std::string sumsKey =
        "tessel-run/ckpt-files/" + saveKey + "/";
    TSL_RETURN_IF_ERROR(
        g.store->set(namesKey + std::to_string(g.rank), names));
    TSL_RETURN_IF_ERROR(g.store->set(sumsKey + std::to_string(g.rank), sums));
    if (g.rank == 0)
      for (int r = 1; r < g.size; ++r) {
        TSL_RETURN_IF_ERROR(
            g.store->get(key + std::to_string(r), layouts[r], g.timeout));
        TSL_RETURN_IF_ERROR(g.store->get(namesKey + std::to_string(r),
                                         weightMaps[r], g.timeout));
        TSL_RETURN_IF_ERROR(g.store->get(sumsKey + std::to_string(r),
                                         fileSums[r], g.timeout));
      }
  }
  if (multi) {
    TSL_RETURN_IF_ERROR(g.comm->barrier());
    std::string key = "tessel-run/ckpt-bytes/" + saveKey;
    int64_t total = 0;
    TSL_RETURN_IF_ERROR(
        g.store->add(key, static_cast<int64_t>(bytes), total));
    TSL_RETURN_IF_ERROR(g.comm->barrier());
    TSL_RETURN_IF_ERROR(g.store->add(key, 0, total));
    bytes = static_cast<uint64_t>(total);
  }

  if (g.rank == 0)
    TSL_RETURN_IF_ERROR(commitCheckpoint(dir, tmp, info, g.size, bytes,
                                         weightMaps, layouts, fileSums));
  if (multi)
    TSL_RETURN_IF_ERROR(g.comm->barrier());
  return Status::ok();
}

std::string checkpointFileEntry(const std::string &name,
                                const std::string &bytes) {
  return checkpointFileEntry(name, bytes.size(),
                             crc32c(bytes.data(), bytes.size()));
}

std::string checkpointFileEntry(const std::string &name, uint64_t size,
                                uint32_t crc) {
  return jsonQuote(name) + ": {\"size\": " + std::to_string(size) +
         ", \"crc32c\": " + std::to_string(crc) + "}";
}

std::string sealIndex(const std::string &body) {
  std::string text = body + kIndexCrcKey;
  return text + "\"" + hex8(crc32c(text.data(), text.size())) + "\"}\n";
}

Status readCheckpointInfo(const std::string &dirArg, CheckpointInfo &info) {
  Index index;
  return parseIndex(trimmed(dirArg), index, info);
}

Status readCheckpointLosses(const std::string &dirArg,
                            std::vector<float> &losses, bool &found) {
  const std::string dir = trimmed(dirArg), path = dir + "/" + kLosses;
  losses.clear();
  found = exists(path);
  if (!found)
    return Status::ok();
  Index index;
  CheckpointInfo info;
  TSL_RETURN_IF_ERROR(parseIndex(dir, index, info));
  std::shared_ptr<MappedFile> f;
  TSL_RETURN_IF_ERROR(openListed(dir, index, kLosses, f));
  Tensor t;
  TSL_RETURN_IF_ERROR(parseNpy(f->data(), f->size(), path, t));
  if (t.dtype() == DType::F32 && t.shape().size() == 1 &&
      t.shape()[0] != info.step)
    return Status::error(path + ": corrupt checkpoint: holds " +
                         std::to_string(t.shape()[0]) +
                         " losses, the index says step " +
                         std::to_string(info.step));
  if (t.dtype() != DType::F32 || t.shape().size() != 1)
    return Status::error(path + ": expected f32 [steps], got " +
                         std::string(dtypeName(t.dtype())) + " " +
                         shapeToString(t.shape()));
  losses.assign(t.data<float>(), t.data<float>() + t.shape()[0]);
  return Status::ok();
}

Status parseCheckpointIndex(const std::string &path, const std::string &text,
                            CheckpointInfo &info) {
  Index index;
  return parseIndexText(path, text, index, info);
}

Status SavedStates::read(const std::string &dirArg) {
  dir = trimmed(dirArg);
  states.clear();
  files.clear();
  Index index;
  TSL_RETURN_IF_ERROR(parseIndex(dir, index, info));
  const std::string indexPath = dir + "/" + kIndex;
  // Every file the index sums is there, and nothing else but the index.
  for (const auto &[name, sum] : index.files)
    if (name != kLosses &&
        (name.compare(0, 4, "rank") != 0 || name.find('/') != std::string::npos))
      return Status::error(indexPath + ": corrupt index: it lists a file '" +
                           name + "' that is no file of a checkpoint");
  // Every rank file, checked against the index; its blocks by state name.
  std::map<std::string, SavedState> &saved = states;
  files.resize(info.ranks);
  uint64_t stateBytes = 0;
  for (int r = 0; r < info.ranks; ++r) {
    const std::string file = rankFile(r), path = dir + "/" + file;
    if (!exists(path))
      return Status::error(path + ": missing from the checkpoint of " +
                           std::to_string(info.ranks) + " rank" +
                           (info.ranks == 1 ? "" : "s"));
    TSL_RETURN_IF_ERROR(openListed(dir, index, file, files[r]));
    SafetensorsIndex st;
    if (Status s = parseSafetensors(files[r]->data(), files[r]->size(), path, st);
        !s)
      return Status::error("corrupt checkpoint: " + s.message());
    // Where the training stands, as the rank file says it.
    for (const auto &[key, value] :
         {std::pair<std::string, int64_t>{"step", info.step},
          {"data_position", info.dataPosition}}) {
      auto it = st.metadata.find(key);
      if (it == st.metadata.end() || it->second != std::to_string(value))
        return Status::error(
            path + ": corrupt checkpoint: its " + key + " is " +
            (it == st.metadata.end() ? "missing" : "'" + it->second + "'") +
            ", the index says " + std::to_string(value));
    }
    // The index and the file must agree (a file from another save).
    const std::string prefix =
        info.ranks > 1 ? "rank" + std::to_string(r) + "/" : "";
    size_t listed = 0;
    for (const auto &[key, where] : index.weightMap) {
      if (key.compare(0, prefix.size(), prefix) != 0 ||
          (info.ranks > 1 && where != file))
        continue;
      if (info.ranks == 1 && where != file)
        return Status::error(indexPath + ": corrupt index: '" + key +
                             "' lies in " + where + ", not " + file);
      ++listed;
      if (!st.tensors.count(key.substr(prefix.size())))
        return Status::error("corrupt checkpoint: the index lists '" + key +
                             "' in " + path + ", which does not hold it");
    }
    if (listed != st.tensors.size())
      return Status::error("corrupt checkpoint: " + path + " holds " +
                           std::to_string(st.tensors.size()) +
                           " tensors, the index lists " +
                           std::to_string(listed));
    for (const auto &[name, e] : st.tensors) {
      StateBlock b;
      b.data = files[r]->data() + st.dataStart + e.begin;
      b.shape = e.shape;
      b.where = path;
      b.rank = r;
      Shape global = e.shape;
      b.offset.assign(e.shape.size(), 0);
      b.within(global);
      b.hasLayout = false;
      // Checkpoints without a layout hold whole states.
      if (auto it = index.layout.find(prefix + name); it != index.layout.end()) {
        global = it->second.first;
        b.offset = it->second.second;
        b.hasLayout = true;
        bool fits = global.size() == e.shape.size();
        for (size_t d = 0; fits && d < global.size(); ++d)
          fits = b.offset[d] <= global[d];
        if (!fits)
          return Status::error(indexPath + ": corrupt index: the layout of '" +
                               prefix + name + "' (" + shapeToString(b.offset) +
                               " in " + shapeToString(global) +
                               ") does not fit its block " +
                               typeToString(e.dtype, e.shape) + " in " + path);
      }
      auto [it, fresh] = saved.try_emplace(name, SavedState{e.dtype, global, {}});
      b.within(global);
      if (!fresh && (it->second.dtype != e.dtype || it->second.global != global))
        return Status::error("corrupt checkpoint: state '" + name + "' is " +
                             typeToString(it->second.dtype, it->second.global) +
                             " in " + it->second.blocks[0].where + ", " +
                             typeToString(e.dtype, global) + " in " + path);
      it->second.blocks.push_back(std::move(b));
      stateBytes += e.end - e.begin;
    }
  }
  // The index's total_size: the bytes of every state of every rank.
  if (auto it = index.metadata.find("total_size");
      it != index.metadata.end() &&
      static_cast<uint64_t>(it->second) != stateBytes)
    return Status::error(indexPath + ": corrupt checkpoint: total_size is " +
                         std::to_string(it->second) + ", the rank files hold " +
                         std::to_string(stateBytes) + " bytes of states");
  return Status::ok();
}

Status SavedStates::assemble(const std::string &name, Tensor &out) const {
  auto it = states.find(name);
  if (it == states.end())
    return Status::error(dir + ": the checkpoint has no state '" + name + "'");
  out = Tensor(it->second.dtype, it->second.global);
  const size_t es = dtypeSize(it->second.dtype);
  std::memset(out.data(), 0, out.numElements() * es);
  StateBlock whole;
  whole.shape = it->second.global;
  whole.offset.assign(whole.shape.size(), 0);
  whole.within(whole.shape);
  if (Status s = fillBlock(name, es, whole, out.data(), it->second.blocks);
      !s)
    return Status::error("corrupt checkpoint: " + dir + ": " + s.message());
  return Status::ok();
}

Status loadCheckpoint(Executor &exec, const std::string &dirArg, int rank,
                      int ranks, bool subset) {
  SavedStates all;
  TSL_RETURN_IF_ERROR(all.read(dirArg));
  const std::string &dir = all.dir;
  const CheckpointInfo &info = all.info;
  std::map<std::string, SavedState> &saved = all.states;

  // Every saved block in the coordinates of the tensor it is part of (a
  // piece of a fused parameter may be saved whole, or whole as pieces).
  struct Tensorwise {
    DType dtype;
    std::vector<StateBlock> blocks;
  };
  std::map<std::string, Tensorwise> byTensor;
  for (const auto &[name, e] : saved)
    for (const StateBlock &b : e.blocks) {
      StateBlock nb = b;
      std::string tensor = blockOfState(name, e.global, b.offset, nb);
      auto [it, fresh] = byTensor.try_emplace(tensor, Tensorwise{e.dtype, {}});
      if (!fresh && it->second.dtype != e.dtype)
        return Status::error("corrupt checkpoint: '" + tensor + "' is " +
                             dtypeName(e.dtype) + " in " + b.where + ", " +
                             dtypeName(it->second.dtype) + " elsewhere");
      it->second.blocks.push_back(std::move(nb));
    }

  // Names, dtypes and global shapes: the program's, checked before anything
  // is set.
  const Program &p = exec.program();
  const std::string where =
      info.ranks == 1 ? dir + "/" + rankFile(0)
                      : dir + " (" + std::to_string(info.ranks) + " ranks)";
  const std::string misfit =
      "--resume " + dirArg + ": the checkpoint does not fit the program: ";
  std::vector<StateBlock> wanted;
  std::vector<std::string> tensors;
  std::set<std::string> programTensors;
  for (const auto &[name, id] : p.states) {
    const BufferInfo &b = p.buffers[id];
    StateBlock w;
    w.shape = b.shape;
    std::string tensor = blockOfState(name, b.globalShape, b.globalOffset, w);
    auto exact = saved.find(name);
    auto whole = byTensor.find(tensor);
    if (exact == saved.end() &&
        (whole == byTensor.end() || tensor == name))
      return Status::error(misfit + "state '" + name + "' (" +
                           typeToString(b.dtype, b.globalShape) +
                           " in the program) is missing from " + where +
                           " (it holds " + std::to_string(saved.size()) +
                           " tensors, the program has " +
                           std::to_string(p.states.size()) + " states)");
    if (exact != saved.end() && (exact->second.dtype != b.dtype ||
                                 exact->second.global != b.globalShape))
      return Status::error(misfit + "state '" + name + "' is " +
                           typeToString(exact->second.dtype,
                                        exact->second.global) +
                           " in " + where + ", " +
                           typeToString(b.dtype, b.globalShape) +
                           " in the program");
    if (whole->second.dtype != b.dtype)
      return Status::error(misfit + "state '" + name + "' is " +
                           dtypeName(whole->second.dtype) + " in " + where +
                           ", " + dtypeName(b.dtype) + " in the program");
    // A state without a layout is each rank's own: only the same rank's.
    bool own = !b.hasLayout;
    if (exact != saved.end())
      for (const StateBlock &sb : exact->second.blocks)
        own |= !sb.hasLayout;
    if (own && info.ranks != ranks)
      return Status::error("--resume " + dirArg + ": a checkpoint of " +
                           std::to_string(info.ranks) + " rank" +
                           (info.ranks == 1 ? "" : "s") +
                           ", but this run has " + std::to_string(ranks) +
                           ", and state '" + name +
                           "' has no layout (each rank's is its own)");
    if (own)
      w.rank = rank;
    wanted.push_back(std::move(w));
    tensors.push_back(tensor);
    programTensors.insert(tensor);
  }
  for (const auto &[name, e] : saved) {
    StateBlock b;
    if (!subset && p.findState(name) < 0 &&
        !programTensors.count(blockOfState(name, e.global, e.blocks[0].offset, b)))
      return Status::error(misfit + where + " holds '" + name + "' (" +
                           typeToString(e.dtype, e.global) +
                           "), which is no state of the program");
  }
  // This rank's block of each state, from the blocks that hold its values.
  std::vector<Tensor> values;
  for (size_t i = 0; i < p.states.size(); ++i) {
    const BufferInfo &b = p.buffers[p.states[i].second];
    Tensor t(b.dtype, b.shape);
    std::memset(t.data(), 0, t.numElements() * dtypeSize(b.dtype));
    std::vector<StateBlock> own;
    if (wanted[i].rank >= 0)
      for (const StateBlock &sb : byTensor[tensors[i]].blocks)
        if (sb.rank == wanted[i].rank)
          own.push_back(sb);
    if (Status s = fillBlock(p.states[i].first, dtypeSize(b.dtype), wanted[i],
                             t.data(),
                             wanted[i].rank >= 0 ? own
                                                 : byTensor[tensors[i]].blocks);
        !s)
      return Status::error("corrupt checkpoint: " + dir + ": state " +
                           s.message());
    values.push_back(std::move(t));
  }
  for (size_t i = 0; i < values.size(); ++i)
    TSL_RETURN_IF_ERROR(exec.setState(p.states[i].first, values[i]));
  return Status::ok();
}

} // namespace tessel::tooling
