//===- Launch.cpp - tessel-run's ranks: launching and joining -------------===//
#include "tessel/tooling/Launch.h"

#include <arpa/inet.h>
#include <cerrno>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <netinet/in.h>
#include <sched.h>
#include <string>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace tessel::runtime;
using std::chrono::milliseconds;

namespace tessel::tooling {

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

/// The numeric form of a socket address.
std::string numericHost(const sockaddr *a, socklen_t len) {
  char host[NI_MAXHOST] = {};
  if (getnameinfo(a, len, host, sizeof(host), nullptr, 0, NI_NUMERICHOST) != 0)
    return "";
  return host;
}

/// The interface that holds address `addr` (numeric), or "".
std::string interfaceOf(const std::string &addr) {
  ifaddrs *list = nullptr;
  if (getifaddrs(&list) != 0)
    return "";
  std::string name;
  for (ifaddrs *i = list; i && name.empty(); i = i->ifa_next) {
    if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET &&
                         i->ifa_addr->sa_family != AF_INET6))
      continue;
    socklen_t len = i->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in)
                                                      : sizeof(sockaddr_in6);
    std::string a = numericHost(i->ifa_addr, len);
    // fe80::1%eth0: the scope is not part of the address.
    if (a.substr(0, a.find('%')) == addr)
      name = i->ifa_name;
  }
  freeifaddrs(list);
  return name;
}

/// The first IPv4 address of interface `name` (else its first IPv6 one);
/// an error that lists the interfaces when it has none.
Status interfaceAddress(const std::string &name, const char *var,
                        std::string &addr) {
  ifaddrs *list = nullptr;
  if (getifaddrs(&list) != 0)
    return Status::error(std::string("getifaddrs: ") + std::strerror(errno));
  std::string v4, v6, all;
  for (ifaddrs *i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr)
      continue;
    int fam = i->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6)
      continue;
    if (all.find(std::string(" ") + i->ifa_name + ",") == std::string::npos)
      all += std::string(" ") + i->ifa_name + ",";
    if (name != i->ifa_name)
      continue;
    socklen_t len = fam == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::string a = numericHost(i->ifa_addr, len);
    if (fam == AF_INET && v4.empty())
      v4 = a;
    if (fam == AF_INET6 && v6.empty() && a.find('%') == std::string::npos)
      v6 = a;
  }
  freeifaddrs(list);
  addr = !v4.empty() ? v4 : v6;
  if (addr.empty()) {
    if (!all.empty())
      all.pop_back();
    return Status::error(std::string(var) + "=" + name +
                         ": no network interface of that name has an IP "
                         "address (this host has:" +
                         all + ")");
  }
  return Status::ok();
}

/// The address of this host from which the kernel routes to `host`: a UDP
/// socket connected to it (nothing is sent) and getsockname, as NCCL's
/// bootstrap finds its interface.
Status routeTo(const std::string &host, int port, std::string &addr) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_DGRAM;
  int gai = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (gai != 0)
    return Status::error("MASTER_ADDR=" + host + " does not resolve: " +
                         gai_strerror(gai));
  std::string why = "no address";
  // IPv4 first, as the store listens on IPv4.
  std::vector<addrinfo *> order;
  for (int v6 = 0; v6 < 2; ++v6)
    for (addrinfo *ai = res; ai; ai = ai->ai_next)
      if ((ai->ai_family == AF_INET6) == (v6 == 1))
        order.push_back(ai);
  for (addrinfo *ai : order) {
    if (!addr.empty())
      break;
    int fd = ::socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
      continue;
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr *>(&local), &len) == 0)
      addr = numericHost(reinterpret_cast<sockaddr *>(&local), len);
    else
      why = std::strerror(errno);
    ::close(fd);
  }
  freeaddrinfo(res);
  if (addr.empty())
    return Status::error("MASTER_ADDR=" + host +
                         " is unreachable from this host: no route to it (" +
                         why + "); set TESSEL_SOCKET_IFNAME to the interface "
                         "that reaches rank 0's host");
  return Status::ok();
}

/// A socket listening on a free port of 127.0.0.1 (-1 on an error, errno
/// set), inheritable across exec: rank 0's store serves on it
/// (TESSEL_STORE_FD), so the port stays taken from the moment it is chosen.
/// (Choosing a free port, closing it and letting rank 0 bind it again left
/// a window in which another job's connection, or its own choice, could
/// take it: two launches at once then met at one store.)
int listenOnFreePort(int &port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  if (::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0 ||
      ::listen(fd, 1024) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) != 0) {
    int saved = errno;
    ::close(fd);
    errno = saved;
    return -1;
  }
  port = ntohs(a.sin_port);
  return fd;
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

/// The cores this process may run on, in order.
std::vector<int> allowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set))
      cpus.push_back(c);
  return cpus;
}

/// Whether this rank's core runs other ranks of the job too: as the
/// launcher says (TESSEL_CORE_SHARED, set for each rank of tessel-run -n),
/// else (torchrun, mpirun) whether the local ranks outnumber the cores
/// this rank may use.
bool coreShared() {
  if (const char *v = env("TESSEL_CORE_SHARED"))
    return std::string(v) == "1";
  int local = 0;
  for (const char *var : {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"})
    if (parseNonNegative(env(var), local) && local > 0)
      break;
  return local > static_cast<int>(allowedCpus().size());
}

/// The cores local rank `r` of `n` runs on, of the launcher's `cpus`: its
/// even share, in order, when there are at least `n` of them (MPI's
/// --bind-to core), else one of them, shared with the ranks of
/// neighbouring placement slots (Launch.h). Unbound, two ranks on a 2-core
/// VM now and then shared one core for a whole launch.
std::vector<int> coresOfLocalRank(int r, int n, const MeshAxes &mesh,
                                  const std::vector<int> &cpus) {
  if (n < 1 || r < 0 || r >= n || cpus.empty())
    return {};
  if (static_cast<int>(cpus.size()) < n) {
    const size_t slot = static_cast<size_t>(placementSlot(r, n, mesh));
    return {cpus[slot * cpus.size() / static_cast<size_t>(n)]};
  }
  const size_t k = cpus.size() / static_cast<size_t>(n);
  return std::vector<int>(cpus.begin() + r * k, cpus.begin() + (r + 1) * k);
}

/// "0-3", "1", "0,2,5-7".
std::string coreList(const std::vector<int> &cores) {
  std::string out;
  for (size_t i = 0; i < cores.size();) {
    size_t j = i;
    while (j + 1 < cores.size() && cores[j + 1] == cores[j] + 1)
      ++j;
    out += (out.empty() ? "" : ",") + std::to_string(cores[i]);
    if (j > i)
      out += "-" + std::to_string(cores[j]);
    i = j + 1;
  }
  return out;
}

} // namespace

int placementSlot(int rank, int n, const MeshAxes &mesh) {
  int64_t product = 1;
  for (const auto &[name, size] : mesh) {
    if (size < 1 || size > n)
      return rank;
    product *= size;
    if (product > n)
      return rank;
  }
  if (product != n || rank < 0 || rank >= n)
    return rank;
  // The rank's coordinates, row-major over the mesh as the compiler numbers
  // ranks (the last axis fastest).
  std::vector<int64_t> coord(mesh.size());
  int64_t rest = rank;
  for (size_t a = mesh.size(); a-- > 0;) {
    coord[a] = rest % mesh[a].second;
    rest /= mesh[a].second;
  }
  // Slot order: the model axes (tp) most significant, so that a tp group
  // spreads over the cores; then pp, then dp least.
  auto tier = [](const std::string &axis) {
    return axis == "pp" ? 1 : axis == "dp" ? 2 : 0;
  };
  int64_t slot = 0;
  for (int t = 0; t <= 2; ++t)
    for (size_t a = 0; a < mesh.size(); ++a)
      if (tier(mesh[a].first) == t)
        slot = slot * mesh[a].second + coord[a];
  return static_cast<int>(slot);
}

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

int launchLocalRanks(int n, int argc, char **argv, const MeshAxes &mesh) {
  const char *bind = std::getenv("TESSEL_BIND");
  if (bind && std::string(bind) != "none" && std::string(bind) != "cores") {
    std::fprintf(stderr,
                 "tessel-run: error: TESSEL_BIND is '%s'; it must be 'cores' "
                 "(the default: each local rank on its share of the cores) "
                 "or 'none'\n",
                 bind);
    return 2;
  }
  int port = 0;
  const int storeFd = listenOnFreePort(port);
  if (storeFd < 0) {
    std::fprintf(stderr,
                 "tessel-run: error: cannot listen on a free TCP port of "
                 "127.0.0.1 for the ranks' store: %s\n",
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
  // The cores the ranks share out (TESSEL_BIND=none: the scheduler's
  // choice, each rank may use them all).
  const std::vector<int> cpus = allowedCpus();
  const bool bound = !(bind && std::string(bind) == "none");
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
      if (r == 0)
        setenv("TESSEL_STORE_FD", std::to_string(storeFd).c_str(), 1);
      else
        ::close(storeFd);
      unsetenv("TESSEL_CORES");
      // Ranks that outnumber the cores share them, bound or not (a value
      // the user set stands).
      setenv("TESSEL_CORE_SHARED",
             !cpus.empty() && n > static_cast<int>(cpus.size()) ? "1" : "0",
             0);
      if (std::vector<int> cores =
              bound ? coresOfLocalRank(r, n, mesh, cpus) : std::vector<int>();
          !cores.empty()) {
        cpu_set_t set;
        CPU_ZERO(&set);
        for (int c : cores)
          CPU_SET(c, &set);
        // Inherited across exec; a refusal leaves the rank unbound.
        if (sched_setaffinity(0, sizeof set, &set) == 0)
          setenv("TESSEL_CORES", coreList(cores).c_str(), 1);
      }
      execv("/proc/self/exe", argv);
      std::fprintf(stderr, "tessel-run: error: exec: %s\n", std::strerror(errno));
      _exit(127);
    }
    children[r] = pid;
  }
  // Rank 0 holds the store's socket now (the ranks connect to its port).
  ::close(storeFd);
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

bool launcherStopped() { return gStopSignal != 0; }

RankSession::~RankSession() {
  // A failed run on rank 0, which hosts the store: the other ranks ask the
  // store who died to name the rank in their own errors, so it keeps
  // serving until they have gone too (or a few seconds), rather than taking
  // the store down and leaving them only "rank 0 is gone".
  if (server && !finished)
    server->waitForGoodbyes(world.size - 1, milliseconds(3000),
                            milliseconds(1000));
}

/// Every rank marks its arrival in the store, then waits for all others:
/// a rank that never started (or never reached the store) is named as such,
/// before any collective could blame it for hanging.
static Status awaitJoined(KVStore &store, const WorldInfo &w,
                          milliseconds timeout) {
  const std::string prefix = "tessel-run/joined/";
  // Each rank's mark is the world size it was started with: a rank started
  // with another WORLD_SIZE is named, not waited for.
  const std::string mine = std::to_string(w.size);
  TSL_RETURN_IF_ERROR(store.set(prefix + std::to_string(w.rank), mine));
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
        if (found && v != mine)
          return Status::error("rank " + std::to_string(r) +
                               " was started with a world of " + v +
                               " ranks, this rank with " + mine + " (" +
                               w.source + ")");
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

Status RankSession::start(const WorldInfo &w, const SessionOptions &so) {
  TSL_RETURN_IF_ERROR(connect(w, so.timeout, so.backend, so.verbose));
  if (so.backend == "cuda" && so.log.check)
    return Status::error("--check-collectives compares descriptions in host "
                         "memory: it needs --device cpu");
  // The hang finder around whatever connect() made.
  CommOptions o;
  o.rank = w.rank;
  o.size = w.size;
  o.store = store;
  o.timeout = so.timeout;
  std::unique_ptr<Communicator> logged;
  TSL_RETURN_IF_ERROR(
      createOpLogCommunicator(o, so.log, std::move(communicator), logged));
  communicator = std::move(logged);
  return Status::ok();
}

Status RankSession::connect(const WorldInfo &w, milliseconds timeout,
                            const std::string &backend, bool verbose) {
  world = w;
  bool loopback = isLoopback(w.masterAddr);
  if (w.rank == 0) {
    const std::string where = "rank 0 hosts the store at " + w.masterAddr +
                              ":" + std::to_string(w.masterPort);
    // The local launcher's socket, already listening on MASTER_PORT.
    if (const char *fdVar = env("TESSEL_STORE_FD")) {
      const std::string fdText = fdVar;
      int fd = -1;
      if (!parseNonNegative(fdText.c_str(), fd))
        return Status::error("TESSEL_STORE_FD='" + fdText +
                             "' is not a file descriptor");
      unsetenv("TESSEL_STORE_FD");
      TSL_RETURN_IF_ERROR(TcpStoreServer::adopt(fd, server)
                              .withContext(where + " (TESSEL_STORE_FD)"));
      if (server->port() != w.masterPort)
        return Status::error(
            where + ": TESSEL_STORE_FD " + fdText + " listens on port " +
            std::to_string(server->port()) + ", not MASTER_PORT");
    } else {
      TSL_RETURN_IF_ERROR(TcpStoreServer::start(w.masterPort, loopback, server)
                              .withContext(where));
    }
  }
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
  o.sharedCore = coreShared();
  if (backend == "cuda") {
    if (!haveNcclCommunicator())
      return Status::error("--device cuda on " + std::to_string(w.size) +
                           " ranks needs NCCL, which this build lacks");
    o.device = w.localRank;
    return createNcclCommunicator(o, communicator);
  }
  // The address Gloo listens on: that of the interface named, else the one
  // that routes to MASTER_ADDR (loopback only when MASTER_ADDR is).
  std::string how;
  for (const char *var :
       {"TESSEL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"})
    if (const char *ifname = env(var)) {
      TSL_RETURN_IF_ERROR(interfaceAddress(ifname, var, o.hostname));
      how = std::string("interface ") + ifname + ", from " + var;
      break;
    }
  if (how.empty()) {
    TSL_RETURN_IF_ERROR(routeTo(w.masterAddr, w.masterPort, o.hostname));
    std::string ifname = interfaceOf(o.hostname);
    how = (ifname.empty() ? std::string("") : "interface " + ifname + ", ") +
          "the route to MASTER_ADDR " + w.masterAddr;
  }
  if (verbose) {
    std::fprintf(stderr, "tessel-run: rank %d: gloo listens on %s (%s)\n",
                 w.rank, o.hostname.c_str(), how.c_str());
    std::fflush(stderr);
  }
  // TESSEL_COMM: "shm" (ranks of one host through shared memory, around
  // Gloo), "gloo" (TCP only), or unset/"auto": shm when every rank is on
  // this host (and none asks for gloo).
  const char *pick = env("TESSEL_COMM");
  std::string mode = pick ? pick : "auto";
  if (mode != "auto" && mode != "shm" && mode != "gloo")
    return Status::error("TESSEL_COMM='" + mode +
                         "' is not one of auto, shm, gloo");
  TSL_RETURN_IF_ERROR(createGlooCommunicator(o, communicator));
  std::vector<int> hostOf;
  TSL_RETURN_IF_ERROR(shmHosts(o, mode != "gloo", hostOf));
  bool oneHost = mode != "gloo", someShare = false;
  for (int r = 0; r < w.size; ++r) {
    oneHost = oneHost && hostOf[r] == 0;
    someShare = someShare || hostOf[r] != r;
  }
  if (!oneHost) {
    if (mode == "shm")
      return Status::error("TESSEL_COMM=shm, but the ranks are not all on "
                           "one host (or some rank has TESSEL_COMM=gloo)");
    // Several hosts: groups within one host still share memory.
    if (!someShare || mode == "gloo")
      return Status::ok();
    std::unique_ptr<Communicator> split;
    Status made = createHostLocalShmCommunicator(o, hostOf,
                                                 std::move(communicator), split);
    communicator = std::move(split);
    return made;
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
  // The cores this rank may run on, as the kernel says (bind-cores.test).
  if (env("TESSEL_TEST_PRINT_AFFINITY")) {
    std::FILE *f = std::fopen("/proc/self/status", "r");
    char line[512];
    while (f && std::fgets(line, sizeof line, f))
      if (std::strncmp(line, "Cpus_allowed_list:", 18) == 0)
        std::fprintf(stderr, "tessel-run: rank %d: Cpus_allowed_list: %s",
                     rank, line + 18 + std::strspn(line + 18, " \t"));
    if (f)
      std::fclose(f);
    std::fprintf(stderr, "tessel-run: rank %d: core shared: %s\n", rank,
                 coreShared() ? "yes" : "no");
  }
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

void killForTest() {
  std::fflush(stdout);
  std::fflush(stderr);
  ::raise(SIGKILL);
}

void testStepHook(int rank, int64_t step) {
#ifdef TESSEL_RUN_TEST_HOOKS
  const char *v = env("TESSEL_TEST_KILL_RANK_AT_STEP");
  if (!v || env("TESSEL_RESTART"))
    return;
  std::string spec = v;
  size_t colon = spec.find(':');
  int r = -1, s = -1;
  if (colon != std::string::npos &&
      parseNonNegative(spec.substr(0, colon).c_str(), r) && r == rank &&
      parseNonNegative(spec.substr(colon + 1).c_str(), s) && s == step) {
    std::fprintf(stderr, "tessel-run: rank %d: TESSEL_TEST_KILL_RANK_AT_STEP: "
                         "killed after step %lld\n",
                 rank, static_cast<long long>(step));
    killForTest();
  }
#else
  (void)rank;
  (void)step;
#endif
}

} // namespace tessel::tooling
