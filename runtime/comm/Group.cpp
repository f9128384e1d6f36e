//===- Group.cpp - Resolving a communicator's subgroups -------------------===//
#include "Group.h"

namespace tessel::runtime::comm {

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

} // namespace tessel::runtime::comm
