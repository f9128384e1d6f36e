//===- Store.cpp - The TCP key-value store of the rendezvous --------------===//
//
// Wire format. Request: op (1 byte), key length, value length (u32 little
// endian each), key, value. Reply: status (1 byte), length (u32), bytes.
//   'H' hello   value = the client's rank          -> 'O' kStoreHello
//   'S' set     key, value                         -> 'O'
//   'G' get     key, value = timeout in ms         -> 'O' value | 'T'
//   'C' check   key                                -> 'O' value | 'M'
//   'A' add     key, value = delta                 -> 'O' new value
//   'L' lost                                       -> 'O' "r1,r2,..."
//   'B' goodbye                                    -> 'O', then close
// The server is one thread polling every connection; a get on a missing key
// waits on the server side until a set provides it or its deadline passes.
//
// Every wait is bounded: a connect by its timeout (non-blocking, so that an
// address that never answers, a host down or cut off, does not hold it for
// the kernel's two minutes of SYN retries), a reply by kReplySlack beyond
// the server's own deadline. A hello answered by something other than this
// store (another program on MASTER_PORT) is an error that says so.
//
//===----------------------------------------------------------------------===//
#include "tessel/runtime/Store.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <set>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace tessel::runtime {

KVStore::~KVStore() = default;

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr size_t kHeader = 9;
constexpr uint32_t kMaxField = 64u << 20;
/// What the server answers a hello with: the client knows it reached a
/// tessel store, not another program listening on the port.
constexpr const char *kStoreHello = "tessel-store 1";
/// How long a client waits for an answer beyond the server's own deadline
/// (a healthy server answers in microseconds): past it, the server's host
/// is taken to be unreachable, or rank 0 stopped.
constexpr milliseconds kReplySlack(2000);

void putU32(std::string &s, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint32_t getU32(const char *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

bool sendAll(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

std::string frame(char op, const std::string &a, const std::string &b) {
  std::string s;
  s.push_back(op);
  putU32(s, static_cast<uint32_t>(a.size()));
  putU32(s, static_cast<uint32_t>(b.size()));
  s += a;
  s += b;
  return s;
}

std::string reply(char status, const std::string &data) {
  std::string s;
  s.push_back(status);
  putU32(s, static_cast<uint32_t>(data.size()));
  s += data;
  return s;
}

} // namespace

//===----------------------------------------------------------------------===//
// Server
//===----------------------------------------------------------------------===//

struct TcpStoreServer::Impl {
  int listenFd = -1;
  int wake[2] = {-1, -1};
  std::thread thread;

  struct Client {
    std::string in;
    int rank = -1;
    bool bye = false;
  };
  struct Waiter {
    int fd;
    std::string key;
    Clock::time_point deadline;
  };
  std::map<int, Client> clients;
  std::vector<Waiter> waiters;
  std::map<std::string, std::string> data;
  std::set<int> lost;

  std::mutex mu;
  std::condition_variable cv;
  int departed = 0;
  /// When a request last arrived (waitForGoodbyes stops waiting for ranks
  /// that no longer use the store: cut off, or hung).
  Clock::time_point lastRequest = Clock::now();

  ~Impl() {
    if (thread.joinable()) {
      char c = 'q';
      (void)!::write(wake[1], &c, 1);
      thread.join();
    }
    for (auto &[fd, c] : clients)
      ::close(fd);
    if (listenFd >= 0)
      ::close(listenFd);
    for (int fd : wake)
      if (fd >= 0)
        ::close(fd);
  }

  void drop(int fd) {
    auto it = clients.find(fd);
    if (it == clients.end())
      return;
    {
      std::lock_guard<std::mutex> l(mu);
      if (!it->second.bye && it->second.rank >= 0)
        lost.insert(it->second.rank);
      ++departed;
    }
    cv.notify_all();
    ::close(fd);
    clients.erase(it);
    waiters.erase(std::remove_if(waiters.begin(), waiters.end(),
                                 [&](const Waiter &w) { return w.fd == fd; }),
                  waiters.end());
  }

  /// Handles one complete request; false drops the client.
  bool handle(int fd, Client &c, char op, const std::string &key,
              const std::string &value) {
    switch (op) {
    case 'H': {
      c.rank = std::atoi(value.c_str());
      std::string r = reply('O', kStoreHello);
      return sendAll(fd, r.data(), r.size());
    }
    case 'S': {
      data[key] = value;
      std::string r = reply('O', "");
      bool ok = sendAll(fd, r.data(), r.size());
      std::string v = reply('O', value);
      for (auto it = waiters.begin(); it != waiters.end();) {
        if (it->key == key) {
          sendAll(it->fd, v.data(), v.size());
          it = waiters.erase(it);
        } else {
          ++it;
        }
      }
      return ok;
    }
    case 'G': {
      auto it = data.find(key);
      if (it != data.end()) {
        std::string r = reply('O', it->second);
        return sendAll(fd, r.data(), r.size());
      }
      long ms = std::atol(value.c_str());
      waiters.push_back({fd, key, Clock::now() + milliseconds(ms)});
      return true;
    }
    case 'C': {
      auto it = data.find(key);
      std::string r = it == data.end() ? reply('M', "") : reply('O', it->second);
      return sendAll(fd, r.data(), r.size());
    }
    case 'A': {
      int64_t v = 0;
      auto it = data.find(key);
      if (it != data.end())
        v = std::atoll(it->second.c_str());
      v += std::atoll(value.c_str());
      data[key] = std::to_string(v);
      std::string r = reply('O', data[key]);
      return sendAll(fd, r.data(), r.size());
    }
    case 'L': {
      std::string list;
      {
        std::lock_guard<std::mutex> l(mu);
        for (int r : lost)
          list += (list.empty() ? "" : ",") + std::to_string(r);
      }
      std::string r = reply('O', list);
      return sendAll(fd, r.data(), r.size());
    }
    case 'B':
      c.bye = true;
      sendAll(fd, reply('O', "").data(), 5);
      return false;
    }
    std::string r = reply('E', "unknown request");
    sendAll(fd, r.data(), r.size());
    return false;
  }

  /// Reads what `fd` has; false drops the client.
  bool readFrom(int fd) {
    Client &c = clients[fd];
    char buf[65536];
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      return true;
    if (n <= 0)
      return false;
    c.in.append(buf, static_cast<size_t>(n));
    {
      std::lock_guard<std::mutex> l(mu);
      lastRequest = Clock::now();
    }
    while (c.in.size() >= kHeader) {
      uint32_t kl = getU32(c.in.data() + 1), vl = getU32(c.in.data() + 5);
      if (kl > kMaxField || vl > kMaxField)
        return false;
      if (c.in.size() < kHeader + kl + vl)
        break;
      char op = c.in[0];
      std::string key = c.in.substr(kHeader, kl);
      std::string value = c.in.substr(kHeader + kl, vl);
      c.in.erase(0, kHeader + kl + vl);
      if (!handle(fd, c, op, key, value))
        return false;
    }
    return true;
  }

  void loop() {
    for (;;) {
      std::vector<pollfd> fds;
      fds.push_back({wake[0], POLLIN, 0});
      fds.push_back({listenFd, POLLIN, 0});
      for (auto &[fd, c] : clients)
        fds.push_back({fd, POLLIN, 0});
      int wait = -1;
      auto now = Clock::now();
      for (const Waiter &w : waiters) {
        auto ms = std::chrono::duration_cast<milliseconds>(w.deadline - now).count();
        ms = std::max<long long>(ms, 0) + 1;
        if (wait < 0 || ms < wait)
          wait = static_cast<int>(std::min<long long>(ms, 1 << 30));
      }
      int r = ::poll(fds.data(), fds.size(), wait);
      if (r < 0 && errno != EINTR)
        return;
      if (fds[0].revents)
        return;
      if (fds[1].revents & POLLIN) {
        int fd = ::accept(listenFd, nullptr, nullptr);
        if (fd >= 0) {
          int one = 1;
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          clients[fd] = Client();
        }
      }
      for (size_t i = 2; i < fds.size(); ++i)
        if (fds[i].revents && !readFrom(fds[i].fd))
          drop(fds[i].fd);
      now = Clock::now();
      std::string t = reply('T', "");
      for (auto it = waiters.begin(); it != waiters.end();) {
        if (it->deadline <= now) {
          sendAll(it->fd, t.data(), t.size());
          it = waiters.erase(it);
        } else {
          ++it;
        }
      }
    }
  }
};

TcpStoreServer::~TcpStoreServer() = default;

Status TcpStoreServer::start(int port, bool loopbackOnly,
                             std::unique_ptr<TcpStoreServer> &out) {
  auto impl = std::make_unique<Impl>();
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return Status::error(std::string("store: socket: ") + std::strerror(errno));
  impl->listenFd = fd;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(loopbackOnly ? INADDR_LOOPBACK : INADDR_ANY);
  if (::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0)
    return Status::error("store: cannot listen on port " + std::to_string(port) +
                         ": " + std::strerror(errno));
  if (::listen(fd, 1024) != 0)
    return Status::error(std::string("store: listen: ") + std::strerror(errno));
  return serve(std::move(impl), out);
}

Status TcpStoreServer::adopt(int listenFd,
                             std::unique_ptr<TcpStoreServer> &out) {
  const std::string what = "store: descriptor " + std::to_string(listenFd);
  int listening = 0, type = 0;
  socklen_t len = sizeof(int);
  if (listenFd < 0 ||
      getsockopt(listenFd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0)
    return Status::error(what + " is not a socket" +
                         (listenFd < 0
                              ? std::string()
                              : std::string(": ") + std::strerror(errno)));
  len = sizeof(int);
  if (getsockopt(listenFd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
      type != SOCK_STREAM || !listening)
    return Status::error(what + " is not a listening TCP socket");
  sockaddr_storage addr{};
  socklen_t addrLen = sizeof(addr);
  if (getsockname(listenFd, reinterpret_cast<sockaddr *>(&addr), &addrLen) !=
          0 ||
      addr.ss_family != AF_INET)
    return Status::error(what + " is not an IPv4 socket");
  ::fcntl(listenFd, F_SETFD, FD_CLOEXEC);
  auto impl = std::make_unique<Impl>();
  impl->listenFd = listenFd;
  return serve(std::move(impl), out);
}

Status TcpStoreServer::serve(std::unique_ptr<Impl> impl,
                             std::unique_ptr<TcpStoreServer> &out) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(impl->listenFd, reinterpret_cast<sockaddr *>(&addr), &len) !=
      0)
    return Status::error(std::string("store: getsockname: ") +
                         std::strerror(errno));
  if (::pipe2(impl->wake, O_CLOEXEC) != 0)
    return Status::error(std::string("store: pipe: ") + std::strerror(errno));
  Impl *raw = impl.get();
  impl->thread = std::thread([raw] { raw->loop(); });
  out.reset(new TcpStoreServer());
  out->boundPort = ntohs(addr.sin_port);
  out->impl = std::move(impl);
  return Status::ok();
}

void TcpStoreServer::waitForGoodbyes(int clients, milliseconds timeout,
                                     milliseconds idle) {
  std::unique_lock<std::mutex> l(impl->mu);
  auto deadline = Clock::now() + timeout;
  while (impl->departed < clients) {
    auto now = Clock::now();
    if (now >= deadline ||
        std::chrono::duration_cast<milliseconds>(now - impl->lastRequest) >=
            idle)
      return;
    impl->cv.wait_for(l, std::min<Clock::duration>(
                             deadline - now, std::chrono::milliseconds(50)));
  }
}

//===----------------------------------------------------------------------===//
// Client
//===----------------------------------------------------------------------===//

struct TcpStore::Impl {
  int fd = -1;
  std::string host;
  int port = 0;
  std::mutex mu;
  bool broken = false;
  ~Impl() {
    if (fd >= 0)
      ::close(fd);
  }
};

TcpStore::~TcpStore() = default;

namespace {

/// Connects a socket of `ai` within `left`; -1 with `why` (errno's text) and
/// `err` (errno) on failure.
int connectWithin(const addrinfo *ai, milliseconds left, std::string &why,
                  int &err) {
  int s = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                   ai->ai_protocol);
  if (s < 0) {
    err = errno;
    why = std::strerror(errno);
    return -1;
  }
  int rc = ::connect(s, ai->ai_addr, ai->ai_addrlen);
  if (rc != 0 && errno == EINPROGRESS) {
    pollfd p{s, POLLOUT, 0};
    int ms = static_cast<int>(std::max<long long>(left.count(), 1));
    int pr;
    do
      pr = ::poll(&p, 1, ms);
    while (pr < 0 && errno == EINTR);
    if (pr == 0) {
      err = ETIMEDOUT;
    } else {
      socklen_t len = sizeof(err);
      err = 0;
      getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
    }
    rc = err ? -1 : 0;
  } else if (rc != 0) {
    err = errno;
  }
  if (rc != 0) {
    why = err == ETIMEDOUT ? "no answer" : std::strerror(err);
    ::close(s);
    return -1;
  }
  int flags = ::fcntl(s, F_GETFL);
  ::fcntl(s, F_SETFL, flags & ~O_NONBLOCK);
  return s;
}

/// What a failed connect to rank 0's store most likely means.
std::string connectHint(int err) {
  switch (err) {
  case ECONNREFUSED:
    return "is rank 0 running?";
  case ETIMEDOUT:
  case EHOSTUNREACH:
  case ENETUNREACH:
  case EHOSTDOWN:
    return "the address is unreachable from this host (rank 0's host down or "
           "cut off, a firewall, or a wrong MASTER_ADDR)";
  default:
    return "is rank 0 running?";
  }
}

} // namespace

Status TcpStore::connect(const std::string &host, int port, int rank,
                         milliseconds timeout, std::unique_ptr<TcpStore> &out) {
  auto impl = std::make_unique<Impl>();
  impl->host = host;
  impl->port = port;
  std::string where = host + ":" + std::to_string(port);
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int gai = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (gai != 0)
    return Status::error("store: cannot resolve '" + host +
                         "': " + gai_strerror(gai));
  auto deadline = Clock::now() + timeout;
  std::string lastError;
  int lastErrno = 0;
  int fd = -1;
  while (fd < 0) {
    for (addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
      auto left = std::chrono::duration_cast<milliseconds>(deadline -
                                                           Clock::now());
      fd = connectWithin(ai, std::max(left, milliseconds(1)), lastError,
                         lastErrno);
    }
    if (fd >= 0 || Clock::now() >= deadline)
      break;
    std::this_thread::sleep_for(milliseconds(20));
  }
  freeaddrinfo(res);
  if (fd < 0)
    return Status::error("store: cannot connect to " + where + " within " +
                         std::to_string(timeout.count() / 1000.0).substr(0, 5) +
                         " s (" + lastError + "); " + connectHint(lastErrno));
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  // A send into a full socket (the server's host gone) ends too.
  timeval tv{static_cast<time_t>(kReplySlack.count() / 1000), 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  impl->fd = fd;
  out.reset(new TcpStore());
  out->impl = std::move(impl);
  if (rank >= 0) {
    char st;
    std::string r;
    Status s = out->request('H', "", std::to_string(rank), st, r,
                            milliseconds(0));
    if (!s || st != 'O' || r != kStoreHello) {
      out.reset();
      return Status::error(
          "store: " + where +
          " accepts connections but does not answer as tessel-run's store "
          "(another program holds MASTER_PORT " +
          std::to_string(port) + "?)" + (s ? "" : ": " + s.message()));
    }
  }
  return Status::ok();
}

std::string TcpStore::where() const {
  return impl->host + ":" + std::to_string(impl->port);
}

Status TcpStore::request(char op, const std::string &key,
                         const std::string &value, char &status,
                         std::string &data, milliseconds wait) {
  std::lock_guard<std::mutex> l(impl->mu);
  auto lostServer = [&](const std::string &why) {
    impl->broken = true;
    return Status::error("lost the connection to the store at " + where() +
                         " (" + why + "): rank 0, which hosts it, is gone");
  };
  auto silentServer = [&] {
    impl->broken = true;
    return Status::error(
        "no answer from the store at " + where() + " within " +
        std::to_string(kReplySlack.count() / 1000) +
        " s: rank 0's host is unreachable (down or cut off), or rank 0 is "
        "stopped");
  };
  if (impl->broken)
    return lostServer("closed earlier");
  std::string msg = frame(op, key, value);
  if (!sendAll(impl->fd, msg.data(), msg.size()))
    return lostServer(std::strerror(errno));
  // The server answers a get by its deadline, anything else at once.
  auto deadline = Clock::now() + wait + kReplySlack;
  std::string buf;
  size_t need = 5;
  while (buf.size() < need) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0)
      return silentServer();
    pollfd p{impl->fd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1 << 30)));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      continue;
    char tmp[65536];
    ssize_t n = ::recv(impl->fd, tmp, std::min(sizeof(tmp), need - buf.size()), 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return lostServer(n == 0 ? "connection closed" : std::strerror(errno));
    buf.append(tmp, static_cast<size_t>(n));
    if (need == 5 && buf.size() == 5)
      need = 5 + getU32(buf.data() + 1);
  }
  status = buf[0];
  data = buf.substr(5);
  if (status == 'E')
    return Status::error("store at " + where() + ": " + data);
  return Status::ok();
}

Status TcpStore::set(const std::string &key, const std::string &value) {
  char st;
  std::string r;
  return request('S', key, value, st, r, milliseconds(0));
}

Status TcpStore::get(const std::string &key, std::string &value,
                     milliseconds timeout) {
  char st;
  TSL_RETURN_IF_ERROR(
      request('G', key, std::to_string(timeout.count()), st, value, timeout));
  if (st == 'T')
    return Status::error("store: timed out after " +
                         std::to_string(timeout.count()) +
                         " ms waiting for key '" + key + "'");
  return Status::ok();
}

Status TcpStore::check(const std::string &key, std::string &value,
                       bool &found) {
  char st;
  TSL_RETURN_IF_ERROR(request('C', key, "", st, value, milliseconds(0)));
  found = st == 'O';
  return Status::ok();
}

Status TcpStore::add(const std::string &key, int64_t delta, int64_t &result) {
  char st;
  std::string r;
  TSL_RETURN_IF_ERROR(request('A', key, std::to_string(delta), st, r,
                              milliseconds(0)));
  result = std::atoll(r.c_str());
  return Status::ok();
}

Status TcpStore::lostRanks(std::vector<int> &ranks) {
  char st;
  std::string r;
  TSL_RETURN_IF_ERROR(request('L', "", "", st, r, milliseconds(0)));
  ranks.clear();
  size_t pos = 0;
  while (pos < r.size()) {
    size_t comma = r.find(',', pos);
    if (comma == std::string::npos)
      comma = r.size();
    ranks.push_back(std::atoi(r.substr(pos, comma - pos).c_str()));
    pos = comma + 1;
  }
  return Status::ok();
}

void TcpStore::goodbye() {
  char st;
  std::string r;
  if (!impl->broken)
    (void)request('B', "", "", st, r, milliseconds(0));
  std::lock_guard<std::mutex> l(impl->mu);
  impl->broken = true;
  if (impl->fd >= 0)
    ::close(impl->fd);
  impl->fd = -1;
}

} // namespace tessel::runtime
