//===- Collectives.cpp - Collective instructions on the CPU ---------------===//
//
// Buffers live in host memory, so the communicator's tensor views point
// straight into the arena. Groups were checked when the program was loaded
// (CollectiveAttrs.cpp); here they are matched against the world: a group
// names world ranks, the communicator's subgroup() takes its indices.
//
//===----------------------------------------------------------------------===//
#include "Collectives.h"
#include "KernelRegistry.h"
#include "KernelResources.h"

#include <algorithm>

namespace tessel::runtime::cpu {

namespace {

bool isCollective(OpKind k) {
  return static_cast<int>(k) >= static_cast<int>(OpKind::AllReduce) &&
         static_cast<int>(k) <= static_cast<int>(OpKind::Recv);
}

std::string where(size_t i, const Op &op) {
  return "instruction " + std::to_string(i) + " (" + opKindName(op.kind) +
         (op.name.empty() ? "" : " '" + op.name + "'") + ")";
}

} // namespace

Status Collectives::init(const Program &program, Communicator *comm) {
  if (!comm) {
    local = createLocalCommunicator();
    comm = local.get();
  }
  world = comm;
  int n = world->size();
  if (program.rank != world->rank() && n > 1)
    return Status::error("the program is rank " + std::to_string(program.rank) +
                         "'s, but this process is rank " +
                         std::to_string(world->rank()) + " of " +
                         std::to_string(n));
  std::vector<std::vector<int>> groups;
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const Op &op = program.ops[i];
    if (!isCollective(op.kind))
      continue;
    const CollectiveAttrs &c = op.coll;
    if (op.kind == OpKind::Send || op.kind == OpKind::Recv) {
      if (c.peer >= n)
        return Status::error(where(i, op) + ": peer rank " +
                             std::to_string(c.peer) + " does not exist in a "
                             "world of " + std::to_string(n) + " ranks");
      continue;
    }
    if (!c.groupGiven) {
      if (n > 1)
        return Status::error(where(i, op) + ": has no 'group' attribute, "
                             "which a world of " + std::to_string(n) +
                             " ranks needs");
      continue;
    }
    for (int r : c.group)
      if (r >= n)
        return Status::error(where(i, op) + ": group holds rank " +
                             std::to_string(r) + ", but the world has " +
                             std::to_string(n) + " ranks");
    if (n == 1)
      continue; // a group of the one rank: the local communicator
    groups.push_back(c.group);
  }
  // World ranks are the world communicator's indices.
  return world->createSubgroups(std::move(groups));
}

std::function<Status()> Collectives::step(const Program &p, const Op &op,
                                          const std::vector<void *> &ptrs) {
  const CollectiveAttrs *c = &op.coll;
  auto view = [&](int id) {
    const BufferInfo &b = p.buffers[id];
    return TensorView(ptrs[id], b.dtype, b.shape);
  };
  if (op.kind == OpKind::Send) {
    TensorView in = view(op.operands[0]);
    Communicator *w = world;
    return [=] { return w->send(in, c->peer, c->tag); };
  }
  if (op.kind == OpKind::Recv) {
    TensorView out = view(op.results[0]);
    Communicator *w = world;
    return [=] { return w->recv(out, c->peer, c->tag); };
  }
  TensorView in = view(op.operands[0]), out = view(op.results[0]);
  Communicator *g = world;
  if (world->size() > 1) {
    Status s = world->subgroup(c->group, g);
    if (!s)
      return [s] { return s; };
  }
  switch (op.kind) {
  case OpKind::AllReduce:
    return [=] { return g->allReduce(in, out, c->reduce); };
  case OpKind::AllGather:
    return [=] { return g->allGather(in, out, c->dim); };
  case OpKind::ReduceScatter:
    return [=] { return g->reduceScatter(in, out, c->reduce, c->dim); };
  case OpKind::AllToAll:
    return [=] { return g->allToAll(in, out, c->splitDim, c->concatDim); };
  case OpKind::CollectivePermute:
    return [=] { return g->collectivePermute(in, out, c->pairs); };
  case OpKind::Broadcast:
    return [=] { return g->broadcast(in, out, c->root); };
  default:
    return [] { return Status::error("not a collective"); };
  }
}

void registerCollectiveKernels(KernelRegistry &r) {
  for (OpKind k : {OpKind::AllReduce, OpKind::AllGather, OpKind::ReduceScatter,
                   OpKind::AllToAll, OpKind::CollectivePermute,
                   OpKind::Broadcast, OpKind::Send, OpKind::Recv})
    r.add(k, [](const KernelContext &c) {
      return c.resources.collectives.step(c.program, c.op, c.ptrs);
    });
}

} // namespace tessel::runtime::cpu
