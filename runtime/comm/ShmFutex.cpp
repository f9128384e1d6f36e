//===- ShmFutex.cpp - Waits of the shm communicator -----------------------===//
//
// The futex calls behind the shm communicator's waits, and the liveness
// check of its peers' processes.
//
//===----------------------------------------------------------------------===//
#include "ShmFutex.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iterator>
#include <linux/futex.h>
#include <signal.h>
#include <string>
#include <sys/syscall.h>
#include <unistd.h>

namespace tessel::runtime::shm {

void futexWait(std::atomic<uint32_t> *word, uint32_t expected,
               std::chrono::nanoseconds upTo) {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(upTo.count() / 1000000000);
  ts.tv_nsec = static_cast<long>(upTo.count() % 1000000000);
  // Shared (not FUTEX_PRIVATE): the waker is another process.
  ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAIT, expected,
            &ts, nullptr, 0);
}

void futexWake(std::atomic<uint32_t> *word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAKE, INT_MAX,
            nullptr, nullptr, 0);
}

bool processGone(int32_t pid) {
  if (pid <= 0 || pid == static_cast<int32_t>(::getpid()))
    return false;
  if (::kill(pid, 0) == -1 && errno == ESRCH)
    return true;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  std::ifstream f(path);
  if (!f)
    return false; // no /proc: kill() said it exists
  std::string stat((std::istreambuf_iterator<char>(f)),
                   std::istreambuf_iterator<char>());
  size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size())
    return false;
  char state = stat[close + 2];
  return state == 'Z' || state == 'X';
}

} // namespace tessel::runtime::shm
