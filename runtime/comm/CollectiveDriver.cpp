//===- CollectiveDriver.cpp - A program's collective instructions ---------===//
//
// Shared by the backends: the CPU's buffers live in host memory, CUDA's in
// device memory, and the communicator's tensor views point straight into
// the arena either way (host communicators for the CPU, NCCL for CUDA). Groups
// were checked when the program was loaded (CollectiveAttrs.cpp); here they are
// matched against the world: a group names world ranks, the communicator's
// subgroup() takes its indices.
//
//===----------------------------------------------------------------------===//
#include "tessel/runtime/CollectiveDriver.h"

#include <algorithm>
#include <cstring>

namespace tessel::runtime {

namespace {

bool isCollective(OpKind k) {
  return static_cast<int>(k) >= static_cast<int>(OpKind::AllReduce) &&
         static_cast<int>(k) <= static_cast<int>(OpKind::Recv);
}

std::string where(size_t i, const Op &op) {
  return "instruction " + std::to_string(i) + " (" + opKindName(op.kind) +
         (op.name.empty() ? "" : " '" + op.name + "'") + ")";
}

/// Whether buffers `a` and `b` share bytes: arena buffers by their range, a
/// STATE buffer (storage of its own) only with itself.
bool overlap(const BufferInfo &a, const BufferInfo &b) {
  if (a.id == b.id)
    return true;
  if (a.kind != BufferInfo::Kind::Arena || b.kind != BufferInfo::Kind::Arena ||
      !a.bytes || !b.bytes)
    return false;
  return a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

/// For each recv, the earliest instruction before which it may be posted:
/// the one after the last instruction before it that reads or writes bytes
/// of its result buffer (the buffer planner reuses arena bytes), or 0, the
/// run's start. A `wait` names both buffers of its asynchronous all_reduce,
/// so bytes that the all_reduce writes in the background count as touched
/// up to the wait.
std::vector<std::vector<size_t>> recvPostPoints(const Program &p) {
  std::vector<std::vector<size_t>> at(p.ops.size());
  for (size_t j = 0; j < p.ops.size(); ++j) {
    if (p.ops[j].kind != OpKind::Recv)
      continue;
    const BufferInfo &out = p.buffers[p.ops[j].results[0]];
    size_t from = 0;
    for (size_t i = j; i-- > 0 && from == 0;) {
      const Op &op = p.ops[i];
      for (const std::vector<int> *ids : {&op.operands, &op.results})
        for (int id : *ids)
          if (overlap(p.buffers[id], out))
            from = i + 1;
    }
    at[from].push_back(j);
  }
  return at;
}

} // namespace

Status CollectiveDriver::post(const Program &p, size_t index,
                              const std::vector<void *> &ptrs) {
  for (size_t j : postAt[index]) {
    const Op &op = p.ops[j];
    const BufferInfo &b = p.buffers[op.results[0]];
    TensorView out(ptrs[b.id], b.dtype, b.shape);
    if (Status s = world->irecv(out, op.coll.peer, op.coll.tag, posted[j]); !s)
      return Status::error(where(j, op) + ", posted early: " + s.message());
  }
  return Status::ok();
}

Status CollectiveDriver::finish(const Program &p) {
  if (!thread)
    return Status::ok();
  Status first = Status::ok();
  for (size_t i = 0; i < sendTickets.size(); ++i) {
    if (!sendTickets[i])
      continue;
    Status s = thread->wait(sendTickets[i]);
    sendTickets[i] = 0;
    if (!s && first.isOk())
      first = Status::error(where(i, p.ops[i]) + ": " + s.message());
  }
  return first;
}

Status CollectiveDriver::init(const Program &program, Communicator *comm,
                              bool overlap) {
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
                             std::to_string(c.peer) +
                             " does not exist in a "
                             "world of " +
                             std::to_string(n) + " ranks");
      continue;
    }
    if (!c.groupGiven) {
      if (n > 1)
        return Status::error(where(i, op) +
                             ": has no 'group' attribute, "
                             "which a world of " +
                             std::to_string(n) + " ranks needs");
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
  // Asynchronous collectives (all_reduces, all_gathers, reduce_scatters):
  // each `wait` names
  // the one that reads its operand 0 and writes its operand 1, earlier in
  // the program.
  waitOf.assign(program.ops.size(), -1);
  tickets.assign(program.ops.size(), 0);
  for (size_t j = 0; j < program.ops.size(); ++j) {
    const Op &w = program.ops[j];
    if (w.kind != OpKind::Wait)
      continue;
    int64_t found = -1;
    for (size_t i = j; i-- > 0;) {
      const Op &op = program.ops[i];
      if ((op.kind == OpKind::AllReduce || op.kind == OpKind::AllGather ||
           op.kind == OpKind::ReduceScatter) &&
          op.operands[0] == w.operands[0] && op.results[0] == w.operands[1]) {
        found = static_cast<int64_t>(i);
        break;
      }
    }
    if (found < 0 || waitOf[found] >= 0)
      return Status::error(
          where(j, w) + ": " +
          (found < 0 ? "no all_reduce, all_gather or reduce_scatter before it "
                       "reads buffer " +
                           std::to_string(w.operands[0]) +
                           " and writes buffer " + std::to_string(w.operands[1])
                     : "waits for the collective (instruction " +
                           std::to_string(found) + ") that instruction " +
                           std::to_string(waitOf[found]) + " waits for"));
    waitOf[found] = static_cast<int64_t>(j);
  }
  postAt = recvPostPoints(program);
  posted.clear();
  posted.resize(program.ops.size());
  const bool sends =
      std::any_of(program.ops.begin(), program.ops.end(),
                  [](const Op &op) { return op.kind == OpKind::Send; });
  sendTickets.assign(program.ops.size(), 0);
  staging.assign(program.ops.size(), {});
  overlapping = overlap && std::any_of(waitOf.begin(), waitOf.end(),
                                       [](int64_t w) { return w >= 0; });
  if (sends || overlapping)
    thread = std::make_unique<CommThread>();
  // World ranks are the world communicator's indices.
  return world->createSubgroups(std::move(groups));
}

std::function<Status()>
CollectiveDriver::step(const Program &p, size_t index,
                       const std::vector<void *> &ptrs) {
  const Op &op = p.ops[index];
  if (op.kind == OpKind::Wait) {
    if (!overlapping)
      return [] { return Status::ok(); }; // its collective ran in place
    // The all_reduce it waits for, by the check in init.
    size_t ar = 0;
    while (waitOf[ar] != static_cast<int64_t>(index))
      ++ar;
    CommThread *t = thread.get();
    uint64_t *ticket = &tickets[ar];
    std::string what = where(ar, p.ops[ar]);
    return [t, ticket, what] {
      Status s = t->wait(*ticket);
      *ticket = 0;
      return s.isOk() ? s : Status::error(what + ": " + s.message());
    };
  }
  if (op.kind == OpKind::Recv) {
    // Posted before (post()); here it is waited for.
    std::unique_ptr<P2PRequest> *req = &posted[index];
    std::string what = where(index, op);
    return [req, what] {
      if (!*req)
        return Status::error("internal: " + what + " was never posted");
      std::unique_ptr<P2PRequest> r = std::move(*req);
      return r->wait();
    };
  }
  if (op.kind == OpKind::Send && thread) {
    // The bytes go out from here if the transport takes them at once
    // (Communicator::trySend: a ring with room); else they are copied here
    // (the buffer planner may reuse them once this instruction has run)
    // and the communication thread sends the copy: a send whose transport
    // blocks (a full ring or socket) never holds up this thread, whose
    // receives drain the peer's sends. The previous run's send of this
    // instruction has long been handed over; its status is collected before
    // the copy is reused, and every send's at the end of the run
    // (finish()).
    const BufferInfo &b = p.buffers[op.operands[0]];
    const void *src = ptrs[b.id];
    std::vector<char> *copy = &staging[index];
    uint64_t *ticket = &sendTickets[index];
    CommThread *t = thread.get();
    Communicator *w = world;
    const CollectiveAttrs *c = &op.coll;
    TensorView view(static_cast<void *>(nullptr), b.dtype, b.shape);
    std::string what = where(index, op);
    return [=]() -> Status {
      if (*ticket) {
        Status s = t->wait(*ticket);
        *ticket = 0;
        if (!s)
          return Status::error(what + " (the previous run's): " + s.message());
      }
      // Eager: with nothing queued before it (so in order, and no other
      // writer), a message the transport takes at once goes from here.
      if (t->idle() &&
          w->trySend(TensorView(const_cast<void *>(src), b.dtype, b.shape),
                     c->peer, c->tag))
        return Status::ok();
      copy->resize(b.bytes);
      std::memcpy(copy->data(), src, b.bytes);
      TensorView v = view;
      v.data = copy->data();
      *ticket = t->submit([w, v, c] { return w->send(v, c->peer, c->tag); });
      return Status::ok();
    };
  }
  std::function<Status()> run = direct(p, op, ptrs);
  if (!thread)
    return run;
  CommThread *t = thread.get();
  if (overlapping && waitOf[index] >= 0) {
    uint64_t *ticket = &tickets[index];
    return [t, ticket, run] {
      *ticket = t->submit(run);
      return Status::ok();
    };
  }
  // In order behind the asynchronous ones and the sends (one thread drives
  // the communicator); with nothing queued there, in place, without the
  // two hand-overs.
  return [t, run] { return t->idle() ? run() : t->wait(t->submit(run)); };
}

std::function<Status()>
CollectiveDriver::direct(const Program &p, const Op &op,
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

} // namespace tessel::runtime
