//===- Checkpoint.cpp - tessel-run's training checkpoints -----------------===//
#include "Checkpoint.h"

#include "tessel/runtime/Json.h"
#include "tessel/support/JsonNesting.h"
#include "tessel/runtime/MappedFile.h"
#include "tessel/runtime/Npy.h"
#include "tessel/runtime/Safetensors.h"
#include "StateBlocks.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <map>
#include <set>
#include <utility>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace tessel::runtime;

namespace tessel::run {

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

int removeEntry(const char *path, const struct stat *, int flag, struct FTW *) {
  return flag == FTW_DP ? ::rmdir(path) : ::unlink(path);
}

/// rm -rf `path`.
Status removeAll(const std::string &path) {
  if (!exists(path))
    return Status::ok();
  if (::nftw(path.c_str(), removeEntry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    return sysError(path + ": cannot remove");
  return Status::ok();
}

Status renamePath(const std::string &from, const std::string &to) {
  if (std::rename(from.c_str(), to.c_str()) != 0)
    return sysError("cannot rename " + from + " to " + to);
  return Status::ok();
}


/// Just enough JSON for the index: objects of strings, integers and
/// objects (other values are skipped).
class IndexParser {
public:
  explicit IndexParser(std::string text) : s(std::move(text)) {}
  std::string error;
  std::map<std::string, int64_t> metadata;
  std::map<std::string, std::string> weightMap;
  /// "layout": key -> (global shape, offset) of the block the key names.
  std::map<std::string, std::pair<Shape, std::vector<int64_t>>> layout;

  bool parse() {
    // The depth first: members() recurses once per level.
    if (::tessel::JsonNesting n = ::tessel::jsonNesting(s, kMaxDepth);
        n.exceeds()) {
      error = "values " + n.describe(kMaxDepth);
      return false;
    }
    ws();
    return members('{',
                   [&](const std::string &key) {
                     if (key == "metadata" || key == "weight_map")
                       return object(key == "metadata");
                     if (key == "layout")
                       return layoutObject();
                     return skip();
                   }) &&
           end();
  }

private:
  static constexpr int kMaxDepth = 64;
  std::string s;
  size_t i = 0;
  int depth = 0;
  char peek() const { return i < s.size() ? s[i] : '\0'; }
  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' ||
                            s[i] == '\r'))
      ++i;
  }
  bool fail(const std::string &what) {
    if (error.empty())
      error = what + " at byte " + std::to_string(i);
    return false;
  }
  bool expect(char c) {
    if (peek() != c)
      return fail(std::string("expected '") + c + "'");
    ++i;
    return true;
  }
  bool end() {
    ws();
    return i == s.size() || fail("trailing bytes");
  }
  bool str(std::string &out) {
    if (!expect('"'))
      return false;
    while (i < s.size() && s[i] != '"') {
      char c = s[i++];
      if (c == '\\') {
        if (i >= s.size())
          return fail("unterminated string");
        char e = s[i++];
        switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          if (i + 4 > s.size())
            return fail("bad \\u escape");
          unsigned v = std::strtoul(s.substr(i, 4).c_str(), nullptr, 16);
          i += 4;
          appendUtf8(out, v);
          break;
        }
        default: out += e;
        }
      } else {
        out += c;
      }
    }
    return expect('"');
  }
  bool integer(int64_t &v) {
    size_t b = i;
    if (peek() == '-')
      ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9')
      ++i;
    if (i == b || (i == b + 1 && s[b] == '-') || i - b > 18)
      return fail("expected an integer");
    v = std::strtoll(s.substr(b, i - b).c_str(), nullptr, 10);
    return true;
  }
  /// The members of an object ('{', keyed) or array ('['), each value
  /// parsed by `value(key)`. Nesting is bounded: the index is untrusted,
  /// and `[[[[...` must not exhaust the stack.
  template <typename F> bool members(char open, F value) {
    const char close = open == '{' ? '}' : ']';
    struct Nest {
      int &d;
      explicit Nest(int &d) : d(++d) {}
      ~Nest() { --d; }
    } nest(depth);
    if (depth > kMaxDepth)
      return fail("values nested more than " + std::to_string(kMaxDepth) +
                  " deep");
    if (!expect(open))
      return false;
    ws();
    if (peek() == close) {
      ++i;
      return true;
    }
    for (;;) {
      ws();
      std::string key;
      if (open == '{') {
        if (!str(key))
          return false;
        ws();
        if (!expect(':'))
          return false;
        ws();
      }
      if (!value(key))
        return false;
      ws();
      if (peek() != ',')
        return expect(close);
      ++i;
    }
  }
  bool skip() {
    char c = peek();
    if (c == '"') {
      std::string x;
      return str(x);
    }
    if (c == '{' || c == '[')
      return members(c, [&](const std::string &) { return skip(); });
    size_t b = i;
    while (i < s.size() && std::strchr(",}] \n\t\r", s[i]) == nullptr)
      ++i;
    return i > b || fail("expected a value");
  }
  bool intList(std::vector<int64_t> &out) {
    return members('[', [&](const std::string &) {
      int64_t v;
      if (!integer(v))
        return false;
      if (v < 0)
        return fail("negative size or offset");
      out.push_back(v);
      return true;
    });
  }
  bool layoutObject() {
    return members('{', [&](const std::string &key) {
      // References, not a structured binding: C++17 lambdas (clang 14,
      // the fuzz build) cannot capture bindings.
      auto &entry = layout[key];
      auto &global = entry.first;
      auto &offset = entry.second;
      bool g = false, o = false;
      if (!members('{', [&](const std::string &field) {
            if (field == "global_shape")
              return (g = true, intList(global));
            if (field == "offset")
              return (o = true, intList(offset));
            return skip();
          }))
        return false;
      if (!g || !o || global.size() != offset.size())
        return fail("layout of '" + key +
                    "' needs global_shape and offset of one length");
      return true;
    });
  }
  bool object(bool meta) {
    return members('{', [&](const std::string &key) {
      if (!meta) {
        std::string v;
        if (!str(v))
          return false;
        weightMap[key] = v;
        return true;
      }
      int64_t v;
      if (peek() == '-' || (peek() >= '0' && peek() <= '9')) {
        if (!integer(v))
          return false;
        metadata[key] = v;
        return true;
      }
      return skip();
    });
  }
};

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

/// The index's text, as read from `path`, into `p` and `info`.
Status parseIndexText(const std::string &path, std::string text,
                      IndexParser &p, CheckpointInfo &info) {
  IndexParser q(std::move(text));
  if (!q.parse())
    return Status::error(path + ": corrupt index: " + q.error);
  for (const char *key : {"step", "data_position", "ranks"})
    if (!q.metadata.count(key))
      return Status::error(path + ": corrupt index: metadata has no integer '" +
                           key + "'");
  info.step = q.metadata["step"];
  info.dataPosition = q.metadata["data_position"];
  int64_t ranks = q.metadata["ranks"];
  if (info.step < 0 || info.dataPosition < 0 || ranks < 1 || ranks > 1 << 20)
    return Status::error(path + ": corrupt index: bad step, data_position or "
                         "ranks");
  info.ranks = static_cast<int>(ranks);
  p.metadata = std::move(q.metadata);
  p.weightMap = std::move(q.weightMap);
  p.layout = std::move(q.layout);
  return Status::ok();
}

Status parseIndex(const std::string &dir, IndexParser &p,
                  CheckpointInfo &info) {
  const std::string path = dir + "/" + kIndex;
  std::string text;
  if (!exists(path))
    return Status::error(dir + ": not a checkpoint (no " + kIndex + ")");
  TSL_RETURN_IF_ERROR(readWhole(path, text));
  return parseIndexText(path, std::move(text), p, info);
}

} // namespace

void saveKillHook(const char *phase, int64_t step) {
#ifdef TESSEL_RUN_TEST_HOOKS
  const char *v = std::getenv("TESSEL_TEST_SAVE_KILL");
  if (!v)
    return;
  std::string want = std::string(phase) + "@" + std::to_string(step);
  if (want == v) {
    std::fflush(stdout);
    std::fflush(stderr);
    ::raise(SIGKILL);
  }
#else
  (void)phase;
  (void)step;
#endif
}

Status removeCheckpointDir(const std::string &dir) {
  return removeAll(trimmed(dir));
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
      TSL_RETURN_IF_ERROR(removeAll(path));
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
      TSL_RETURN_IF_ERROR(removeAll(old));
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

Status saveCheckpoint(Executor &exec, const std::string &dirArg,
                      const CheckpointInfo &info, CheckpointGroup &g) {
  const std::string dir = trimmed(dirArg);
  auto [parent, base] = splitPath(dir);
  const bool multi = g.size > 1;
  // The temporary directory, made by rank 0, its name shared.
  std::string tmp;
  if (g.rank == 0) {
    tmp = dir + ".tmp-" + std::to_string(::getpid());
    TSL_RETURN_IF_ERROR(makeDirs(parent));
    TSL_RETURN_IF_ERROR(removeAll(tmp));
    if (::mkdir(tmp.c_str(), 0755) != 0)
      return sysError(tmp + ": cannot create directory");
    if (multi)
      TSL_RETURN_IF_ERROR(
          g.store->set("tessel-run/ckpt/" + std::to_string(info.step), tmp));
  } else {
    TSL_RETURN_IF_ERROR(g.store->get(
        "tessel-run/ckpt/" + std::to_string(info.step), tmp, g.timeout));
  }

  // This rank's states.
  const Program &p = exec.program();
  std::vector<Tensor> values(p.states.size());
  std::vector<SafetensorsTensor> tensors;
  uint64_t bytes = 0;
  for (size_t i = 0; i < p.states.size(); ++i) {
    const std::string &name = p.states[i].first;
    TSL_RETURN_IF_ERROR(exec.getState(name, values[i]));
    tensors.push_back(
        {name, values[i].dtype(), values[i].shape(), values[i].data()});
    bytes += values[i].numElements() * dtypeSize(values[i].dtype());
  }
  TSL_RETURN_IF_ERROR(
      writeBytesSynced(tmp + "/" + rankFile(g.rank), encodeSafetensors(tensors)));
  if (info.losses && static_cast<int64_t>(info.losses->size()) == info.step)
    TSL_RETURN_IF_ERROR(writeNpy(
        tmp + "/" + kLosses,
        Tensor::fromVector(DType::F32, {info.step}, *info.losses)));
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
  std::vector<std::string> layouts(g.size), weightMaps(g.size);
  layouts[g.rank] = layout;
  weightMaps[g.rank] = names;
  if (multi) {
    const std::string key =
        "tessel-run/ckpt-layout/" + std::to_string(info.step) + "/";
    const std::string namesKey =
        "tessel-run/ckpt-names/" + std::to_string(info.step) + "/";
    TSL_RETURN_IF_ERROR(g.store->set(key + std::to_string(g.rank), layout));
    TSL_RETURN_IF_ERROR(
        g.store->set(namesKey + std::to_string(g.rank), names));
    if (g.rank == 0)
      for (int r = 1; r < g.size; ++r) {
        TSL_RETURN_IF_ERROR(
            g.store->get(key + std::to_string(r), layouts[r], g.timeout));
        TSL_RETURN_IF_ERROR(g.store->get(namesKey + std::to_string(r),
                                         weightMaps[r], g.timeout));
      }
  }
  if (multi) {
    TSL_RETURN_IF_ERROR(g.comm->barrier());
    std::string key = "tessel-run/ckpt-bytes/" + std::to_string(info.step);
    int64_t total = 0;
    TSL_RETURN_IF_ERROR(
        g.store->add(key, static_cast<int64_t>(bytes), total));
    TSL_RETURN_IF_ERROR(g.comm->barrier());
    TSL_RETURN_IF_ERROR(g.store->add(key, 0, total));
    bytes = static_cast<uint64_t>(total);
  }

  if (g.rank == 0) {
    // The index: every rank's names.
    std::string json = "{\n  \"metadata\": {\"format\": \"tessel-checkpoint\", "
                       "\"step\": " +
                       std::to_string(info.step) +
                       ", \"data_position\": " +
                       std::to_string(info.dataPosition) +
                       ", \"ranks\": " + std::to_string(g.size) +
                       ", \"total_size\": " + std::to_string(bytes) +
                       "},\n  \"weight_map\": {";
    bool first = true;
    for (int r = 0; r < g.size; ++r)
      if (!weightMaps[r].empty()) {
        json += (first ? "" : ",") + weightMaps[r];
        first = false;
      }
    json += "\n  },\n  \"layout\": {";
    bool any = false;
    for (int r = 0; r < g.size; ++r)
      if (!layouts[r].empty()) {
        json += (any ? "," : "") + layouts[r];
        any = true;
      }
    json += "\n  }\n}\n";
    TSL_RETURN_IF_ERROR(writeBytesSynced(tmp + "/" + kIndex, json));
    TSL_RETURN_IF_ERROR(fsyncDirectory(tmp));
    // The swap: the previous checkpoint stays until the new one is in place.
    const std::string old = dir + ".old";
    TSL_RETURN_IF_ERROR(removeAll(old));
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
      TSL_RETURN_IF_ERROR(removeAll(old));
  }
  if (multi)
    TSL_RETURN_IF_ERROR(g.comm->barrier());
  return Status::ok();
}

Status readCheckpointInfo(const std::string &dirArg, CheckpointInfo &info) {
  IndexParser p("");
  return parseIndex(trimmed(dirArg), p, info);
}

Status readCheckpointLosses(const std::string &dirArg,
                            std::vector<float> &losses, bool &found) {
  const std::string path = trimmed(dirArg) + "/" + kLosses;
  losses.clear();
  found = exists(path);
  if (!found)
    return Status::ok();
  Tensor t;
  TSL_RETURN_IF_ERROR(readNpy(path, t));
  if (t.dtype() != DType::F32 || t.shape().size() != 1)
    return Status::error(path + ": expected f32 [steps], got " +
                         std::string(dtypeName(t.dtype())) + " " +
                         shapeToString(t.shape()));
  losses.assign(t.data<float>(), t.data<float>() + t.shape()[0]);
  return Status::ok();
}

Status parseCheckpointIndex(const std::string &path, const std::string &text,
                            CheckpointInfo &info) {
  IndexParser p("");
  return parseIndexText(path, text, p, info);
}

Status SavedStates::read(const std::string &dirArg) {
  dir = trimmed(dirArg);
  states.clear();
  files.clear();
  IndexParser index("");
  TSL_RETURN_IF_ERROR(parseIndex(dir, index, info));
  const std::string indexPath = dir + "/" + kIndex;
  // Every rank file, checked against the index; its blocks by state name.
  std::map<std::string, SavedState> &saved = states;
  files.resize(info.ranks);
  for (int r = 0; r < info.ranks; ++r) {
    const std::string file = rankFile(r), path = dir + "/" + file;
    if (!exists(path))
      return Status::error(path + ": missing from the checkpoint of " +
                           std::to_string(info.ranks) + " rank" +
                           (info.ranks == 1 ? "" : "s"));
    TSL_RETURN_IF_ERROR(openOwnFile(path, files[r]));
    SafetensorsIndex st;
    if (Status s = parseSafetensors(files[r]->data(), files[r]->size(), path, st);
        !s)
      return Status::error("corrupt checkpoint: " + s.message());
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
    }
  }
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

} // namespace tessel::run
