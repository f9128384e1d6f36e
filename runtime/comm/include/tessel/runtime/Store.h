//===- Store.h - A key-value store for rendezvous ---------------*- C++ -*-===//
//
// Ranks meet through a small key-value store: Gloo's rendezvous writes each
// rank's address into it, NCCL's bootstrap shares the ncclUniqueId through
// it, and failed collectives leave their diagnosis there. Rank 0 hosts a
// TcpStoreServer at MASTER_ADDR:MASTER_PORT; every rank (rank 0 included)
// talks to it through a TcpStore. Gloo ships no TCP store, hence this one.
//
// The server notes which ranks' connections close without a goodbye:
// lostRanks() on any client names ranks that died.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_STORE_H
#define TESSEL_RUNTIME_STORE_H

#include "tessel/runtime/Status.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tessel::runtime {

class KVStore {
public:
  virtual ~KVStore();
  virtual Status set(const std::string &key, const std::string &value) = 0;
  /// Waits until `key` exists (at most `timeout`), then reads it.
  virtual Status get(const std::string &key, std::string &value,
                     std::chrono::milliseconds timeout) = 0;
  /// Reads `key` without waiting; `found` says whether it exists.
  virtual Status check(const std::string &key, std::string &value,
                       bool &found) = 0;
  /// Atomically adds `delta` to the integer at `key` (0 when missing).
  virtual Status add(const std::string &key, int64_t delta, int64_t &result) = 0;
  /// World ranks whose connection to the server closed without a goodbye.
  virtual Status lostRanks(std::vector<int> &ranks) = 0;
  /// A description of where the store lives, for messages.
  virtual std::string where() const = 0;
};

class TcpStoreServer {
public:
  ~TcpStoreServer();
  /// Listens on `port` (0 picks a free one) of every interface, or of
  /// 127.0.0.1 when `loopbackOnly`, and serves from a thread.
  static Status start(int port, bool loopbackOnly,
                      std::unique_ptr<TcpStoreServer> &out);
  /// Serves on `listenFd`, a TCP socket already bound and listening, which
  /// the server then owns: the local launcher's, inherited by rank 0 across
  /// exec, so that no other program can take the port between the
  /// launcher's choice of it and the server's start. Refused, naming the
  /// descriptor, when it is not a listening TCP socket.
  static Status adopt(int listenFd, std::unique_ptr<TcpStoreServer> &out);
  int port() const { return boundPort; }
  /// Waits until `clients` connections said goodbye (or closed), at most
  /// `timeout`, and no longer than `idle` without any request; the host rank
  /// calls it before exiting so that no other rank loses the store while it
  /// still needs it (a rank cut off, or hung, does not hold it up).
  void waitForGoodbyes(int clients, std::chrono::milliseconds timeout,
                       std::chrono::milliseconds idle =
                           std::chrono::milliseconds::max());

private:
  TcpStoreServer() = default;
  struct Impl;
  /// Starts the serving thread on impl's bound, listening socket.
  static Status serve(std::unique_ptr<Impl> impl,
                      std::unique_ptr<TcpStoreServer> &out);
  std::unique_ptr<Impl> impl;
  int boundPort = 0;
};

class TcpStore : public KVStore {
public:
  ~TcpStore() override;
  /// Connects to host:port, retrying until `timeout` (the server may start
  /// after its clients). `rank` identifies this client in lostRanks()
  /// (-1: anonymous).
  static Status connect(const std::string &host, int port, int rank,
                        std::chrono::milliseconds timeout,
                        std::unique_ptr<TcpStore> &out);
  Status set(const std::string &key, const std::string &value) override;
  Status get(const std::string &key, std::string &value,
             std::chrono::milliseconds timeout) override;
  Status check(const std::string &key, std::string &value,
               bool &found) override;
  Status add(const std::string &key, int64_t delta, int64_t &result) override;
  Status lostRanks(std::vector<int> &ranks) override;
  std::string where() const override;
  /// Tells the server this client leaves on purpose, then disconnects.
  void goodbye();

private:
  TcpStore() = default;
  Status request(char op, const std::string &key, const std::string &value,
                 char &status, std::string &reply,
                 std::chrono::milliseconds wait);
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_STORE_H
