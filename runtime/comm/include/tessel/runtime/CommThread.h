//===- CommThread.h - Collectives on a thread of their own -------*- C++ -*-===//
//
// The CPU executor's communication thread: collectives queued in program
// order run one after another on it, so every rank issues them in the same
// order while the executor's thread goes on computing. An asynchronous
// collective (a gradient bucket's all_reduce) is waited for by ticket at
// its `wait` instruction; a synchronous one is queued and waited for at
// once, behind the asynchronous ones before it.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_COMM_COMMTHREAD_H
#define TESSEL_RUNTIME_COMM_COMMTHREAD_H

#include "tessel/runtime/Status.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace tessel::runtime {

class CommThread {
public:
  CommThread();
  /// Finishes what is queued, then joins the thread.
  ~CommThread();
  CommThread(const CommThread &) = delete;
  CommThread &operator=(const CommThread &) = delete;

  /// Queues `work` behind everything queued before; returns its ticket.
  uint64_t submit(std::function<Status()> work);
  /// Blocks until ticket's work has run; its status. Each ticket is waited
  /// for at most once.
  Status wait(uint64_t ticket);
  /// Blocks until everything queued has run; forgets their statuses.
  void drain();
  /// Whether everything submitted has run (its statuses may wait to be
  /// collected): then, until the next submit, the thread touches nothing.
  bool idle();

private:
  void loop();

  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<uint64_t, std::function<Status()>>> queue;
  // Statuses of work done but not yet waited for.
  std::map<uint64_t, Status> done;
  uint64_t nextTicket = 1;
  uint64_t finished = 0; // every ticket <= finished has run (FIFO)
  bool stopping = false;
  std::thread thread;
};

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_COMM_COMMTHREAD_H
