//===- ShmSegment.cpp - The shm communicator's shared memory --------------===//
//
// Segment naming, creation and mapping, and the protocol through the store
// that leaves nothing in /dev/shm: member 0 unlinks the segment once every
// member has mapped it, and publishes the verdict. And which ranks may
// share a segment (shmHosts, shmUsable: one host, as hostIdentity says).
//
//===----------------------------------------------------------------------===//
#include "ShmSegment.h"

#include "tessel/runtime/Store.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <random>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tessel::runtime::shm {

using namespace comm;

namespace {

constexpr uint64_t kMagic = 0x3130304d48534c54; // "TLSHM001"

std::string errnoText(const std::string &what) {
  return what + ": " + std::strerror(errno);
}

/// A name for shm_open: "/tessel-PREFIX-PID-RANDOM".
std::string segmentName(const std::string &prefix) {
  std::string clean;
  for (char c : prefix.substr(0, 64))
    clean += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  std::random_device rd;
  uint64_t r = (uint64_t(rd()) << 32) ^ rd();
  char tail[48];
  std::snprintf(tail, sizeof(tail), "-%d-%016llx", static_cast<int>(::getpid()),
                static_cast<unsigned long long>(r));
  return "/tessel-" + clean + tail;
}

} // namespace

const char *opName(uint32_t op) {
  // By Op's value, from kAllReduce = 1.
  static constexpr const char *kNames[] = {
      "all_reduce", "all_gather", "reduce_scatter", "broadcast",
      "barrier",    "send",       "recv"};
  return op >= kAllReduce && op <= kRecv ? kNames[op - kAllReduce] : "?";
}

std::string ChunkHeader::describe() const {
  std::string s = opName(op);
  if (op == kBarrier)
    return s;
  if (op == kAllReduce || op == kReduceScatter)
    s +=
        std::string(" (") + reduceKindName(static_cast<ReduceKind>(kind)) + ")";
  if (op == kAllGather || op == kReduceScatter)
    s += " along dim " + std::to_string(arg);
  if (op == kBroadcast)
    s += " from " + std::to_string(arg);
  s += std::string(op == kAllGather ? " into " : " of ") +
       dtypeName(static_cast<DType>(dtype)) + " [";
  for (uint32_t i = 0; i < rank && i < kMaxDims; ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + (rank > kMaxDims ? ", ...]" : "]");
}

Mapping::~Mapping() {
  if (base)
    ::munmap(base, bytes);
}

Status openSegment(ShmWorld &w, const std::vector<int> &members, int me,
                   Mapping &out) {
  const int n = static_cast<int>(members.size());
  KVStore &store = *w.store;
  std::string keys = w.prefix + "shm" + listToString(members) + "/";
  size_t slot = std::max(roundUp(w.slotBytes, 64), size_t(64) * n);
  SegmentLayout layout(n, slot);
  std::string name, error;
  Mapping m;

  if (me == 0) {
    name = segmentName(w.prefix);
    int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
      error = errnoText("shm_open " + name);
    } else {
      int rc = 0;
      if (::ftruncate(fd, static_cast<off_t>(layout.total)) != 0)
        error = errnoText("ftruncate");
      else if ((rc =
                    ::posix_fallocate(fd, 0, static_cast<off_t>(layout.total))))
        error = "cannot reserve " + std::to_string(layout.total >> 10) +
                " KiB in /dev/shm: " + std::strerror(rc);
      if (error.empty()) {
        void *p = ::mmap(nullptr, layout.total, PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_POPULATE, fd, 0);
        if (p == MAP_FAILED) {
          error = errnoText("mmap");
        } else {
          m.base = static_cast<char *>(p);
          m.bytes = layout.total;
        }
      }
      ::close(fd);
      if (!error.empty())
        ::shm_unlink(name.c_str());
    }
    if (error.empty()) {
      auto *h = reinterpret_cast<SegmentHeader *>(m.base);
      h->members = static_cast<uint32_t>(n);
      h->slotBytes = slot;
      h->totalBytes = layout.total;
      for (int i = 0; i < n; ++i)
        new (m.base + layout.lines + i * sizeof(MemberLine)) MemberLine{};
      for (int i = 0; i < layout.channelCount; ++i)
        for (int end = 0; end < 2; ++end)
          new (m.base + layout.channels + i * layout.channelStride +
               end * sizeof(ChannelEnd)) ChannelEnd{};
      std::atomic_thread_fence(std::memory_order_release);
      h->magic = kMagic;
    }
    Status s = store.set(keys + "segment", error.empty() ? name : "!" + error);
    if (!s && error.empty())
      ::shm_unlink(name.c_str());
    TSL_RETURN_IF_ERROR(s);
    if (!error.empty())
      return Status::error("cannot create the shared-memory segment: " + error);
  } else {
    std::string v;
    TSL_RETURN_IF_ERROR(store.get(keys + "segment", v, w.timeout));
    if (!v.empty() && v[0] == '!')
      return Status::error(
          "rank " + std::to_string(members[0]) +
          " cannot create the shared-memory segment: " + v.substr(1));
    name = v;
    int fd = ::shm_open(name.c_str(), O_RDWR, 0);
    struct stat st {};
    if (fd < 0) {
      error = errnoText("shm_open " + name);
    } else {
      if (::fstat(fd, &st) != 0)
        error = errnoText("fstat " + name);
      else if (static_cast<size_t>(st.st_size) != layout.total)
        error = name + " has " + std::to_string(st.st_size) + " bytes, not " +
                std::to_string(layout.total);
      if (error.empty()) {
        void *p = ::mmap(nullptr, layout.total, PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_POPULATE, fd, 0);
        if (p == MAP_FAILED) {
          error = errnoText("mmap " + name);
        } else {
          m.base = static_cast<char *>(p);
          m.bytes = layout.total;
          auto *h = reinterpret_cast<SegmentHeader *>(m.base);
          if (h->magic != kMagic || h->members != static_cast<uint32_t>(n) ||
              h->slotBytes != slot)
            error = name + " is not this group's segment";
        }
      }
      ::close(fd);
    }
  }
  if (error.empty()) {
    auto *line = reinterpret_cast<MemberLine *>(m.base + layout.lines) + me;
    line->pid.store(static_cast<int32_t>(::getpid()),
                    std::memory_order_release);
  }
  if (me != 0) {
    // Tell the creator, then learn the verdict: the segment is unlinked by
    // the time it comes.
    TSL_RETURN_IF_ERROR(store.set(keys + "mapped/" + std::to_string(me),
                                  error.empty() ? "ok" : "!" + error));
    std::string v;
    TSL_RETURN_IF_ERROR(store.get(keys + "verdict", v, w.timeout));
    if (v != "ok")
      return Status::error(v.substr(1));
  } else {
    for (int i = 1; i < n && error.empty(); ++i) {
      std::string v;
      Status s = store.get(keys + "mapped/" + std::to_string(i), v, w.timeout);
      if (!s)
        error = "rank " + std::to_string(members[i]) +
                " did not map the shared-memory segment: " + s.message();
      else if (v != "ok")
        error = "rank " + std::to_string(members[i]) +
                " cannot map the shared-memory segment: " + v.substr(1);
    }
    ::shm_unlink(name.c_str());
    TSL_RETURN_IF_ERROR(
        store.set(keys + "verdict", error.empty() ? "ok" : "!" + error));
  }
  if (!error.empty())
    return Status::error(error);
  out = std::move(m);
  return Status::ok();
}

} // namespace tessel::runtime::shm

namespace tessel::runtime {

//===----------------------------------------------------------------------===//
// Which ranks may share a segment
//===----------------------------------------------------------------------===//

Status shmHosts(const CommOptions &options, bool want,
                std::vector<int> &hostOf) {
  hostOf.assign(options.size, 0);
  if (!options.store)
    return Status::error("shm needs a store to compare the ranks' hosts");
  // Same machine and boot, the same PID (pids are checked for liveness)
  // and mount (/dev/shm) namespaces, and the same network namespace (ranks
  // in two are two hosts, whose traffic goes over TCP).
  std::string where = comm::hostIdentity();
  std::string keys = options.prefix + "shm-host/";
  TSL_RETURN_IF_ERROR(options.store->set(keys + std::to_string(options.rank),
                                         (want ? "1" : "0") + where));
  std::vector<std::string> all(options.size);
  for (int r = 0; r < options.size; ++r) {
    if (r == options.rank) {
      all[r] = (want ? "1" : "0") + where;
      continue;
    }
    TSL_RETURN_IF_ERROR(
        options.store->get(keys + std::to_string(r), all[r], options.timeout));
  }
  // A rank that does not want shm is a host of its own.
  for (int r = 0; r < options.size; ++r) {
    hostOf[r] = r;
    if (all[r][0] == '1')
      for (int q = 0; q < r; ++q)
        if (all[q] == all[r]) {
          hostOf[r] = hostOf[q];
          break;
        }
  }
  return Status::ok();
}

Status shmUsable(const CommOptions &options, bool want, bool &usable) {
  std::vector<int> hostOf;
  usable = false;
  TSL_RETURN_IF_ERROR(shmHosts(options, want, hostOf));
  usable = want;
  for (int h : hostOf)
    usable = usable && h == 0;
  return Status::ok();
}

} // namespace tessel::runtime
