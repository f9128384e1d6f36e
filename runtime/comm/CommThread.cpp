//===- CommThread.cpp - Collectives on a thread of their own --------------===//
#include "tessel/runtime/CommThread.h"

namespace tessel::runtime {

CommThread::CommThread() : thread([this] { loop(); }) {}

CommThread::~CommThread() {
  {
    std::lock_guard<std::mutex> lock(mu);
    stopping = true;
  }
  cv.notify_all();
  thread.join();
}

uint64_t CommThread::submit(std::function<Status()> work) {
  uint64_t ticket;
  {
    std::lock_guard<std::mutex> lock(mu);
    ticket = nextTicket++;
    queue.emplace_back(ticket, std::move(work));
  }
  cv.notify_all();
  return ticket;
}

Status CommThread::wait(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(mu);
  if (ticket == 0 || ticket >= nextTicket)
    return Status::error("internal: wait for a collective never queued");
  cv.wait(lock, [&] { return finished >= ticket; });
  auto it = done.find(ticket);
  if (it == done.end())
    return Status::error("internal: a collective waited for twice");
  Status s = std::move(it->second);
  done.erase(it);
  return s;
}

void CommThread::drain() {
  std::unique_lock<std::mutex> lock(mu);
  const uint64_t last = nextTicket - 1;
  cv.wait(lock, [&] { return finished >= last; });
  done.clear();
}

bool CommThread::idle() {
  std::lock_guard<std::mutex> lock(mu);
  return finished + 1 == nextTicket;
}

void CommThread::loop() {
  std::unique_lock<std::mutex> lock(mu);
  for (;;) {
    cv.wait(lock, [&] { return stopping || !queue.empty(); });
    if (queue.empty())
      return; // stopping, nothing left
    auto [ticket, work] = std::move(queue.front());
    queue.pop_front();
    lock.unlock();
    Status s = work();
    lock.lock();
    done.emplace(ticket, std::move(s));
    finished = ticket;
    cv.notify_all();
  }
}

} // namespace tessel::runtime
