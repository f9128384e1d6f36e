//===- CommunicatorBase.cpp - The skeleton of the multi-rank backends -----===//
#include "CommunicatorBase.h"

#include <cstring>
#include <fstream>
#include <unistd.h>

namespace tessel::runtime::comm {

namespace {
std::string readFirstLine(const char *path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}
std::string readLink(const char *path) {
  char buf[256];
  ssize_t n = ::readlink(path, buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : std::string();
}
} // namespace

std::string hostIdentity() {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  return std::string(host) + "\n" +
         readFirstLine("/proc/sys/kernel/random/boot_id") + "\n" +
         readLink("/proc/self/ns/pid") + "\n" + readLink("/proc/self/ns/mnt") +
         "\n" + readLink("/proc/self/ns/net");
}

std::string listToString(const std::vector<int> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

Status resolveGroup(const std::vector<int> &ranks,
                    const std::vector<int> &members, int me,
                    std::vector<int> &worldRanks, int &index) {
  const int size = static_cast<int>(members.size());
  std::vector<bool> seen(members.size());
  index = -1;
  worldRanks.clear();
  for (size_t i = 0; i < ranks.size(); ++i) {
    int r = ranks[i];
    if (r < 0 || r >= size)
      return Status::error("group " + listToString(ranks) + ": rank " +
                           std::to_string(r) + " is out of range for " +
                           std::to_string(size) + " ranks");
    if (seen[r])
      return Status::error("group " + listToString(ranks) + " lists rank " +
                           std::to_string(r) + " twice");
    seen[r] = true;
    if (r == me)
      index = static_cast<int>(i);
    worldRanks.push_back(members[r]);
  }
  if (index < 0)
    return Status::error("group " + listToString(ranks) +
                         " does not include this rank (" + std::to_string(me) +
                         ")");
  return Status::ok();
}

Status checkOptions(const CommOptions &o, const char *noStore) {
  if (o.size < 1 || o.rank < 0 || o.rank >= o.size)
    return Status::error("invalid rank " + std::to_string(o.rank) + " of " +
                         std::to_string(o.size));
  if (!o.store)
    return Status::error(noStore);
  return Status::ok();
}

std::vector<int> allRanks(int n) {
  std::vector<int> members(n);
  for (int i = 0; i < n; ++i)
    members[i] = i;
  return members;
}

Status checkBroadcast(const TensorView &in, const TensorView &out, int root,
                      int n) {
  if (root < 0 || root >= n)
    return Status::error("root " + std::to_string(root) +
                         " is out of range for a group of " +
                         std::to_string(n));
  return checkAllReduceShapes(in, out, ReduceKind::Max);
}

Status checkPermute(const TensorView &in, const TensorView &out,
                    const std::vector<std::pair<int, int>> &pairs, int n,
                    int me, int &from, int &to) {
  TSL_RETURN_IF_ERROR(checkPermutePairs(pairs, n));
  TSL_RETURN_IF_ERROR(checkAllReduceShapes(in, out, ReduceKind::Max));
  from = to = -1;
  for (auto [s, d] : pairs) {
    if (d == me)
      from = s;
    if (s == me)
      to = d;
  }
  return Status::ok();
}

Status checkPeer(int peer, int64_t tag, int n, int me, const char *what) {
  if (peer < 0 || peer >= n || peer == me)
    return Status::error(std::string(what) + " rank " + std::to_string(peer) +
                         ": not another rank of " + std::to_string(n));
  if (tag < 0 || tag >= (int64_t(1) << 48))
    return Status::error("tag " + std::to_string(tag) + " is out of range");
  return Status::ok();
}

Status copyHost(const TensorView &in, const TensorView &out) {
  if (in.data != out.data && out.bytes())
    std::memcpy(out.data, in.data, out.bytes());
  return Status::ok();
}

CommunicatorBase::~CommunicatorBase() {
  if (ownedWorld)
    ownedWorld->owned.clear();
}

Status CommunicatorBase::subgroup(const std::vector<int> &ranks,
                                  Communicator *&out) {
  std::vector<int> wr;
  int index;
  TSL_RETURN_IF_ERROR(resolveGroup(ranks, members, me, wr, index));
  if (wr == members) {
    out = this;
    return Status::ok();
  }
  auto it = world->groups.find(wr);
  if (it == world->groups.end()) {
    Communicator *made = nullptr;
    TSL_RETURN_IF_ERROR(newSubgroup(ranks, wr, index, made));
    it = world->groups.emplace(wr, made).first;
  }
  out = it->second;
  return Status::ok();
}

Communicator *CommunicatorBase::adopt(std::unique_ptr<Communicator> c) {
  world->owned.push_back(std::move(c));
  return world->owned.back().get();
}

std::string CommunicatorBase::where(const std::string &op) const {
  return "rank " + std::to_string(worldRank()) + ": " + op + " over ranks " +
         listToString(members);
}

} // namespace tessel::runtime::comm
