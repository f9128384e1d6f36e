//===- CollectiveDriver.h - A program's collective instructions -*- C++ -*-===//
//
// What both backends run a program's collectives, sends, receives and waits
// through: groups resolved to cached subgroups when the executor is
// created, the overlap of asynchronous collectives on a communication
// thread (CommThread.h), and receives posted early.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_COMM_COLLECTIVEDRIVER_H
#define TESSEL_RUNTIME_COMM_COLLECTIVEDRIVER_H

#include "tessel/runtime/CommThread.h"
#include "tessel/runtime/Communicator.h"
#include "tessel/runtime/Program.h"

#include <algorithm>
#include <functional>
#include <memory>

namespace tessel::runtime {

/// An executor's collectives: resolves each instruction's group to a
/// cached sub-communicator when the executor is created, then runs them.
class CollectiveDriver {
public:
  /// `comm` is the world (nullptr: a local communicator of one rank). Checks
  /// that the world matches the program and creates every subgroup the
  /// program uses, in canonical order.
  /// `overlap`: run the collectives that `wait`s name on a communication
  /// thread until their wait (else every collective runs in place and
  /// waits do nothing). A program with sends has the thread regardless: a
  /// send the transport cannot take at once (a full ring or socket) goes
  /// from there, so that it never holds up the rank, whose receives drain
  /// its peer's sends.
  Status init(const Program &program, Communicator *comm, bool overlap = true);
  /// The step of collective, point-to-point or wait instruction `index`.
  /// With a communication thread (the program has sends, or `wait`s to
  /// overlap), every collective runs in program order behind what is
  /// queued there (in place when nothing is); overlapping, one that a
  /// `wait` names runs there asynchronously until that wait. A send goes
  /// from here when the transport takes it at once and nothing is queued,
  /// else it hands a copy of its operand to the thread. A recv waits for
  /// the receive post() posted.
  std::function<Status()> step(const Program &program, size_t index,
                               const std::vector<void *> &ptrs);
  /// Waits for every queued collective (after a failed step: they may
  /// still read or write the arena); forgets the receives posted early.
  void drain() {
    if (thread)
      thread->drain();
    for (auto &r : posted)
      r.reset();
    std::fill(sendTickets.begin(), sendTickets.end(), 0);
  }
  /// At the end of a run: waits until the communication thread has handed
  /// every send of the run to the communicator (staged there: this does not
  /// wait for the receivers); the first failure.
  Status finish(const Program &program);

  /// The `wait` that completes instruction `index` (an asynchronous
  /// collective), or -1: its results are complete when its step returns.
  int64_t completedBy(size_t index) const {
    return index < waitOf.size() ? waitOf[index] : -1;
  }

  /// Whether receives are to be posted right before instruction `index`
  /// runs (index == ops.size(): never).
  bool postsBefore(size_t index) const {
    return index < postAt.size() && !postAt[index].empty();
  }
  /// Posts them (Communicator::irecv): each recv's result buffer is
  /// untouched from there to the recv, which waits for it.
  Status post(const Program &program, size_t index,
              const std::vector<void *> &ptrs);

private:
  /// The step that runs instruction `op` on the calling thread.
  std::function<Status()> direct(const Program &program, const Op &op,
                                 const std::vector<void *> &ptrs);

  /// The receives posted before each instruction, and the requests in
  /// flight, by recv instruction.
  std::vector<std::vector<size_t>> postAt;
  std::vector<std::unique_ptr<P2PRequest>> posted;
  /// Sends (with a communication thread): the copy each sends, and the
  /// ticket of its send, by instruction.
  std::vector<std::vector<char>> staging;
  std::vector<uint64_t> sendTickets;

  std::unique_ptr<Communicator> local;
  Communicator *world = nullptr;
  // Asynchronous all_reduces by instruction index: the wait that ends each,
  // and the ticket of the run in flight.
  std::vector<int64_t> waitOf;
  std::vector<uint64_t> tickets;
  // Declared last: destroyed (joined) first.
  std::unique_ptr<CommThread> thread;
  /// Whether collectives run on `thread` (init's `overlap`, and waits to
  /// overlap up to).
  bool overlapping = false;
};

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_COMM_COLLECTIVEDRIVER_H
