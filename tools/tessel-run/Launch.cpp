//===- Launch.cpp - tessel-run's ranks: launching and joining -------------===//
#include "Launch.h"

#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace tessel::runtime;
using std::chrono::milliseconds;

namespace tessel::run {

namespace {

const char *env(const char *name) {
  const char *v = std::getenv(name);
  return v && *v ? v : nullptr;
}

bool parseNonNegative(const char *s, int &out) {
  if (!s || !*s || std::strlen(s) > 9)
    return false;
  for (const char *p = s; *p; ++p)
    if (*p < '0' || *p > '9')
      return false;
  out = std::atoi(s);
  return true;
}

Status intVar(const char *name, int &out, int minValue) {
  const char *v = env(name);
  if (!parseNonNegative(v, out) || out < minValue)
    return Status::error(std::string(name) + "='" + (v ? v : "") +
                         "' is not an integer >= " + std::to_string(minValue));
  return Status::ok();
}

bool isLoopback(const std::string &addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

/// A TCP port free right now on 127.0.0.1.
int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

// The launcher's children, for its signal handler.
std::vector<pid_t> *gChildren = nullptr;
volatile sig_atomic_t gStopSignal = 0;

void forwardSignal(int sig) {
  gStopSignal = sig;
  if (gChildren)
    for (pid_t p : *gChildren)
      if (p > 0)
        ::kill(p, SIGTERM);
}

std::string describeExit(int rank, int status) {
  if (WIFEXITED(status))
    return "rank " + std::to_string(rank) + " exited with code " +
           std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "rank " + std::to_string(rank) + " was killed by signal " +
           std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) +
           ")";
  return "rank " + std::to_string(rank) + " stopped";
}

} // namespace

Status readWorld(WorldInfo &w) {
  struct Source {
    const char *rank, *size, *local, *name;
  };
  const Source sources[] = {
      {"RANK", "WORLD_SIZE", "LOCAL_RANK", "RANK/WORLD_SIZE"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
       "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_RANK/SIZE (mpirun)"},
      {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "PMI_RANK/PMI_SIZE"},
      {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
       "SLURM_PROCID/SLURM_NTASKS (srun)"},
  };
  w = WorldInfo();
  for (const Source &s : sources) {
    bool hasRank = env(s.rank), hasSize = env(s.size);
    if (!hasRank && !hasSize)
      continue;
    if (!hasRank || !hasSize)
      return Status::error(std::string(hasRank ? s.rank : s.size) +
                           " is set but " + (hasRank ? s.size : s.rank) +
                           " is not");
    TSL_RETURN_IF_ERROR(intVar(s.size, w.size, 1));
    TSL_RETURN_IF_ERROR(intVar(s.rank, w.rank, 0));
    if (w.rank >= w.size)
      return Status::error(std::string(s.rank) + "=" + std::to_string(w.rank) +
                           " is not below " + s.size + "=" +
                           std::to_string(w.size));
    if (env(s.local))
      TSL_RETURN_IF_ERROR(intVar(s.local, w.localRank, 0));
    w.fromEnv = true;
    w.source = s.name;
    break;
  }
  if (!w.fromEnv || w.size == 1)
    return Status::ok();
  const char *addr = env("MASTER_ADDR");
  if (!addr)
    return Status::error(
        "MASTER_ADDR is not set: with " + w.source +
        " every rank needs the address of rank 0's host (mpirun: -x "
        "MASTER_ADDR=HOST -x MASTER_PORT=PORT)");
  w.masterAddr = addr;
  w.masterPort = 29500;
  if (env("MASTER_PORT")) {
    TSL_RETURN_IF_ERROR(intVar("MASTER_PORT", w.masterPort, 1));
    if (w.masterPort > 65535)
      return Status::error("MASTER_PORT=" + std::to_string(w.masterPort) +
                           " is not a TCP port");
  }
  return Status::ok();
}

int launchLocalRanks(int n, int argc, char **argv) {
  int port = freePort();
  if (port < 0) {
    std::fprintf(stderr, "tessel-run: error: no free TCP port on 127.0.0.1: %s\n",
                 std::strerror(errno));
    return 1;
  }
  std::vector<pid_t> children(n, -1);
  gChildren = &children;
  struct sigaction sa {};
  sa.sa_handler = forwardSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  pid_t self = getpid();
  std::fflush(stdout);
  std::fflush(stderr);
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    if (pid < 0) {
      std::fprintf(stderr, "tessel-run: error: fork: %s\n", std::strerror(errno));
      forwardSignal(SIGTERM);
      break;
    }
    if (pid == 0) {
      // Die with the launcher, whatever kills it.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != self)
        _exit(1);
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(n).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(n).c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      execv("/proc/self/exe", argv);
      std::fprintf(stderr, "tessel-run: error: exec: %s\n", std::strerror(errno));
      _exit(127);
    }
    children[r] = pid;
  }
  (void)argc;

  // Watch: the first rank to fail names the culprit; the others get a
  // moment to report what they saw, then are killed.
  int live = 0;
  for (pid_t p : children)
    live += p > 0;
  std::string firstFailure;
  auto graceEnd = std::chrono::steady_clock::time_point::max();
  while (live > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno != EINTR)
      break;
    if (pid <= 0) {
      if (std::chrono::steady_clock::now() >= graceEnd) {
        for (pid_t p : children)
          if (p > 0)
            ::kill(p, SIGKILL);
        graceEnd = std::chrono::steady_clock::time_point::max();
      }
      std::this_thread::sleep_for(milliseconds(5));
      continue;
    }
    int rank = -1;
    for (int r = 0; r < n; ++r)
      if (children[r] == pid) {
        rank = r;
        children[r] = -1;
      }
    if (rank < 0)
      continue;
    --live;
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (ok || !firstFailure.empty())
      continue;
    firstFailure = describeExit(rank, status);
    if (live > 0) {
      std::fprintf(stderr, "tessel-run: %s; stopping the other %d rank%s\n",
                   firstFailure.c_str(), live, live == 1 ? "" : "s");
      graceEnd = std::chrono::steady_clock::now() + milliseconds(2000);
    }
  }
  gChildren = nullptr;
  if (gStopSignal) {
    std::fprintf(stderr, "tessel-run: stopped by signal %d\n",
                 static_cast<int>(gStopSignal));
    return 1;
  }
  if (!firstFailure.empty()) {
    std::fprintf(stderr, "tessel-run: error: %s\n", firstFailure.c_str());
    return 1;
  }
  return 0;
}

RankSession::~RankSession() {
  // A failed run on rank 0, which hosts the store: the other ranks ask the
  // store who died to name the rank in their own errors, so it keeps
  // serving until they have gone too (or a few seconds), rather than taking
  // the store down and leaving them only "rank 0 is gone".
  if (server && !finished)
    server->waitForGoodbyes(world.size - 1, milliseconds(3000));
}

/// Every rank marks its arrival in the store, then waits for all others:
/// a rank that never started (or never reached the store) is named as such,
/// before any collective could blame it for hanging.
static Status awaitJoined(KVStore &store, const WorldInfo &w,
                          milliseconds timeout) {
  const std::string prefix = "tessel-run/joined/";
  TSL_RETURN_IF_ERROR(store.set(prefix + std::to_string(w.rank), "1"));
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<bool> joined(w.size, false);
  joined[w.rank] = true;
  for (;;) {
    std::string missing;
    int count = 0;
    for (int r = 0; r < w.size; ++r) {
      if (!joined[r]) {
        std::string v;
        bool found = false;
        TSL_RETURN_IF_ERROR(store.check(prefix + std::to_string(r), v, found));
        joined[r] = found;
      }
      if (!joined[r]) {
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        ++count;
      }
    }
    if (missing.empty())
      return Status::ok();
    if (std::chrono::steady_clock::now() >= deadline) {
      long long ms = timeout.count();
      std::string within = ms % 1000 ? std::to_string(ms) + " ms"
                                     : std::to_string(ms / 1000) + " s";
      return Status::error(
          std::string(count == 1 ? "rank " : "ranks ") + missing +
          " never joined within " + within + " (no process with " +
          (count == 1 ? "that RANK" : "those RANKs") + " reached the store at " +
          w.masterAddr + ":" + std::to_string(w.masterPort) + " of this " +
          std::to_string(w.size) + "-rank world; --timeout sets the wait)");
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
}

Status RankSession::start(const WorldInfo &w, milliseconds timeout,
                          const std::string &backend) {
  world = w;
  bool loopback = isLoopback(w.masterAddr);
  if (w.rank == 0)
    TSL_RETURN_IF_ERROR(
        TcpStoreServer::start(w.masterPort, loopback, server)
            .withContext("rank 0 hosts the store at " + w.masterAddr + ":" +
                         std::to_string(w.masterPort)));
  std::unique_ptr<TcpStore> s;
  TSL_RETURN_IF_ERROR(
      TcpStore::connect(w.masterAddr, w.masterPort, w.rank, timeout, s));
  store = std::move(s);
  TSL_RETURN_IF_ERROR(awaitJoined(*store, w, timeout));
  CommOptions o;
  o.rank = w.rank;
  o.size = w.size;
  o.store = store;
  o.timeout = timeout;
  if (backend == "cuda") {
    if (!haveNcclCommunicator())
      return Status::error("--device cuda on " + std::to_string(w.size) +
                           " ranks needs NCCL, which this build lacks");
    o.device = w.localRank;
    return createNcclCommunicator(o, communicator);
  }
  if (loopback)
    o.hostname = "127.0.0.1";
  else if (const char *ifname = env("TESSEL_SOCKET_IFNAME"))
    o.iface = ifname;
  else if (const char *gloo = env("GLOO_SOCKET_IFNAME"))
    o.iface = gloo;
  // TESSEL_COMM: "shm" (ranks of one host through shared memory, around
  // Gloo), "gloo" (TCP only), or unset/"auto": shm when every rank is on
  // this host (and none asks for gloo).
  const char *pick = env("TESSEL_COMM");
  std::string mode = pick ? pick : "auto";
  if (mode != "auto" && mode != "shm" && mode != "gloo")
    return Status::error("TESSEL_COMM='" + mode +
                         "' is not one of auto, shm, gloo");
  TSL_RETURN_IF_ERROR(createGlooCommunicator(o, communicator));
  bool usable = false;
  TSL_RETURN_IF_ERROR(shmUsable(o, mode != "gloo", usable));
  if (!usable) {
    if (mode == "shm")
      return Status::error("TESSEL_COMM=shm, but the ranks are not all on "
                           "one host (or some rank has TESSEL_COMM=gloo)");
    return Status::ok();
  }
  std::unique_ptr<Communicator> shm;
  Status made = createShmCommunicator(o, std::move(communicator), shm);
  communicator = std::move(shm); // the Gloo one again on an error
  if (!made) {
    if (mode == "shm")
      return made;
    std::fprintf(stderr,
                 "tessel-run: rank %d: warning: %s; collectives go over "
                 "gloo\n",
                 w.rank, made.message().c_str());
  }
  return Status::ok();
}

Status RankSession::finish() {
  if (!communicator)
    return Status::ok();
  TSL_RETURN_IF_ERROR(communicator->barrier());
  store->goodbye();
  if (server)
    server->waitForGoodbyes(world.size, milliseconds(10000));
  finished = true;
  return Status::ok();
}

void testHooks(int rank) {
#ifdef TESSEL_RUN_TEST_HOOKS
  int r = -1;
  if (parseNonNegative(env("TESSEL_TEST_CRASH_RANK"), r) && r == rank) {
    std::fprintf(stderr, "tessel-run: rank %d: TESSEL_TEST_CRASH_RANK: exiting "
                         "with status 3\n", rank);
    std::fflush(stderr);
    _exit(3);
  }
  if (parseNonNegative(env("TESSEL_TEST_KILL_RANK"), r) && r == rank)
    ::raise(SIGKILL);
  if (parseNonNegative(env("TESSEL_TEST_HANG_RANK"), r) && r == rank)
    for (;;)
      ::pause();
  // K:MS: rank K is killed MS milliseconds into its runs (mid-step).
  if (const char *v = env("TESSEL_TEST_KILL_RANK_AFTER_MS")) {
    std::string spec = v;
    size_t colon = spec.find(':');
    int ms = 0;
    if (colon != std::string::npos &&
        parseNonNegative(spec.substr(0, colon).c_str(), r) && r == rank &&
        parseNonNegative(spec.substr(colon + 1).c_str(), ms))
      std::thread([ms] {
        std::this_thread::sleep_for(milliseconds(ms));
        ::raise(SIGKILL);
      }).detach();
  }
#else
  (void)rank;
#endif
}

} // namespace tessel::run
