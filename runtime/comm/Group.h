//===- Group.h - Resolving a communicator's subgroups -----------*- C++ -*-===//
//
// What every backend does before it builds (or finds) a subgroup: check the
// requested member list and map it to world ranks.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_COMM_GROUP_H
#define TESSEL_RUNTIME_COMM_GROUP_H

#include "tessel/runtime/Status.h"

#include <string>
#include <vector>

namespace tessel::runtime::comm {

/// "[0, 2, 3]".
std::string listToString(const std::vector<int> &v);

/// Checks `ranks` (indices into `members`, in group order) and fills
/// `worldRanks` with the members' world ranks and `index` with this rank's
/// (`me`, an index into `members`) position in the group. Fails, naming the
/// group, on an index out of range, an index listed twice, or a group
/// without this rank.
Status resolveGroup(const std::vector<int> &ranks,
                    const std::vector<int> &members, int me,
                    std::vector<int> &worldRanks, int &index);

} // namespace tessel::runtime::comm

#endif // TESSEL_RUNTIME_COMM_GROUP_H
