//===- OpLog.cpp - The hang finder: a log of every rank's operations ------===//
//
// A communicator around a world communicator (and, through subgroup(),
// around each of its subgroups) that records every collective and
// point-to-point operation this rank issues in a ring buffer: its position
// (n-th operation of the rank, n-th over its group), kind, group, dtype,
// shape and tag, and whether it finished. The inner communicator does the
// work.
//
// When an operation fails (a timeout, a dead peer), the rank publishes its
// log in the store and reads the logs of the others for a moment (every
// rank that fails publishes, about at the same time), then cross-checks
// them: for each group, the first position where two members issued
// different operations, or where one stopped while the other went on; for
// each send, the recv that should match it. opLogReport() gives the lines.
//
// With `check` (tessel-run --check-collectives), every operation is first
// compared with its peers': an all_gather of a fixed-size description over
// the same group (bytes, as a bool tensor), or, for a send, a description
// sent ahead with a tag of its own. Two ranks running different programs fail at the first
// operation where they differ, naming both, instead of at a timeout.
//
//===----------------------------------------------------------------------===//
#include "CommunicatorBase.h"
#include "tessel/runtime/Store.h"

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

namespace tessel::runtime {

namespace {

using namespace comm;

/// Bytes of an operation's description in a --check-collectives exchange.
constexpr size_t kDescBytes = 256;
/// The tag space of the descriptions sent ahead of a send.
constexpr int64_t kCheckTag = int64_t(1) << 50;
/// How many of its last operations a rank prints after a failure.
constexpr size_t kShown = 6;

struct Record {
  uint64_t seq = 0;      // this rank's n-th operation (from 1)
  std::string group;     // "0,1": world ranks; for send/recv "from>to"
  uint64_t groupSeq = 0; // n-th over the group (send/recv: of its tag)
  std::string op;        // "all_reduce sum f32 [768]", "send tag 3 f32 [4]"
  int64_t tag = -1;      // send/recv
  char state = 'I';      // I: issued, D: done, F: failed
};

/// "0,1" -> {0, 1}.
std::vector<int> parseRanks(const std::string &s) {
  std::vector<int> v;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty())
      v.push_back(std::atoi(item.c_str()));
  return v;
}

std::string joinRanks(const std::vector<int> &v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

std::string serialize(const Record &r) {
  return std::to_string(r.seq) + "|" + r.group + "|" +
         std::to_string(r.groupSeq) + "|" + std::to_string(r.tag) + "|" +
         r.state + "|" + r.op;
}

bool deserialize(const std::string &line, Record &r) {
  std::vector<std::string> f;
  size_t pos = 0;
  for (int i = 0; i < 5; ++i) {
    size_t bar = line.find('|', pos);
    if (bar == std::string::npos)
      return false;
    f.push_back(line.substr(pos, bar - pos));
    pos = bar + 1;
  }
  r.seq = std::strtoull(f[0].c_str(), nullptr, 10);
  r.group = f[1];
  r.groupSeq = std::strtoull(f[2].c_str(), nullptr, 10);
  r.tag = std::atoll(f[3].c_str());
  r.state = f[4].empty() ? 'I' : f[4][0];
  r.op = line.substr(pos);
  return true;
}


class LoggedComm;

/// What the world wrapper and its subgroups share.
struct LogWorld {
  OpLogOptions options;
  std::shared_ptr<KVStore> store;
  std::string prefix;
  int rank = 0;
  int size = 1;
  std::chrono::milliseconds timeout{30000};

  std::mutex mu;
  std::deque<Record> ring;
  uint64_t seq = 0;
  /// Operations per group, and per (from>to, tag) for send/recv.
  std::map<std::string, uint64_t> perGroup;
  std::map<std::vector<int>, std::unique_ptr<LoggedComm>> groups;
  bool reported = false;
  std::vector<std::string> report;

  std::string groupText(const std::vector<int> &worldRanks) {
    std::string name =
        options.groupName ? options.groupName(worldRanks) : std::string();
    return (name.empty() ? "" : name + " ") + listToString(worldRanks);
  }

  /// Appends `r` (seq and groupSeq assigned); its index for finish().
  uint64_t issue(Record &r) {
    std::lock_guard<std::mutex> l(mu);
    r.seq = ++seq;
    std::string key = r.tag >= 0 ? r.group + "#" + std::to_string(r.tag)
                                 : r.group;
    r.groupSeq = ++perGroup[key];
    ring.push_back(r);
    while (ring.size() > options.capacity)
      ring.pop_front();
    return r.seq;
  }
  void finish(uint64_t seq, bool ok) {
    std::lock_guard<std::mutex> l(mu);
    for (auto it = ring.rbegin(); it != ring.rend(); ++it)
      if (it->seq == seq) {
        it->state = ok ? 'D' : 'F';
        break;
      }
  }
  /// The first failure: publish, gather, cross-check (once per process).
  void onFailure();
};

/// "all_reduce sum f32 [768] over dp [0, 1]" for a record.
std::string readable(LogWorld &w, const Record &r) {
  if (r.tag >= 0) {
    size_t gt = r.group.find('>');
    return r.op + " (rank " + r.group.substr(0, gt) + " to rank " +
           r.group.substr(gt + 1) + ")";
  }
  return r.op + " over " + w.groupText(parseRanks(r.group));
}

std::string ordinal(uint64_t n) {
  const char *suffix = "th";
  if (n % 100 < 11 || n % 100 > 13) {
    if (n % 10 == 1)
      suffix = "st";
    else if (n % 10 == 2)
      suffix = "nd";
    else if (n % 10 == 3)
      suffix = "rd";
  }
  return std::to_string(n) + suffix;
}

/// The cross-check of the published logs (by world rank): the first
/// disagreement, or what is known of who stopped where.
std::vector<std::string> crossCheck(LogWorld &w,
                                    const std::map<int, std::vector<Record>> &logs) {
  // By group (or send/recv pair and tag): each rank's records by position.
  struct Found {
    uint64_t order = UINT64_MAX; // the earlier rank's seq: smallest first
    std::string text;
  } best;
  auto consider = [&](uint64_t order, std::string text) {
    if (order < best.order)
      best = {order, std::move(text)};
  };
  std::map<std::string, std::map<int, std::map<uint64_t, const Record *>>> by;
  for (const auto &[rank, log] : logs)
    for (const Record &r : log)
      by[r.tag >= 0 ? r.group + "#" + std::to_string(r.tag) + "#" +
                          (r.op.rfind("send", 0) == 0 ? "s" : "r")
                    : r.group][rank][r.groupSeq] = &r;
  for (const auto &[key, perRank] : by) {
    if (key.find('#') != std::string::npos) {
      // send at `from` against recv at `to`.
      if (key.back() != 's')
        continue;
      std::string pair = key.substr(0, key.find('#'));
      size_t gt = pair.find('>');
      int from = std::atoi(pair.substr(0, gt).c_str());
      int to = std::atoi(pair.substr(gt + 1).c_str());
      auto sends = perRank.find(from);
      auto recvs = by.find(key.substr(0, key.size() - 1) + "r");
      if (sends == perRank.end() || !logs.count(to))
        continue;
      const std::map<uint64_t, const Record *> *rs = nullptr;
      if (recvs != by.end()) {
        auto it = recvs->second.find(to);
        if (it != recvs->second.end())
          rs = &it->second;
      }
      for (const auto &[n, s] : sends->second) {
        const Record *r = nullptr;
        if (rs) {
          auto it = rs->find(n);
          if (it != rs->end())
            r = it->second;
        }
        std::string sendOp = s->op.substr(s->op.find(' ') + 1);
        if (r && r->op.substr(r->op.find(' ') + 1) != sendOp)
          consider(s->seq, "rank " + std::to_string(from) + "'s " +
                               ordinal(s->seq) + " op is " + readable(w, *s) +
                               ", but the recv it meets on rank " +
                               std::to_string(to) + " (its " +
                               ordinal(r->seq) + " op) is " + readable(w, *r));
        bool covered = rs && !rs->empty() && rs->begin()->first <= n;
        if (!r && (covered || !rs))
          consider(s->seq, "rank " + std::to_string(from) + "'s " +
                               ordinal(s->seq) + " op, " + readable(w, *s) +
                               ", has no matching recv on rank " +
                               std::to_string(to) + " (it posted " +
                               std::to_string(rs ? rs->size() : 0) +
                               " recv" + (rs && rs->size() == 1 ? "" : "s") +
                               " of that tag from rank " +
                               std::to_string(from) + ")");
        if (!r)
          break;
      }
      continue;
    }
    // A collective group: compare every two members that published.
    std::vector<int> members = parseRanks(key);
    for (size_t i = 0; i < members.size(); ++i)
      for (size_t j = i + 1; j < members.size(); ++j) {
        int a = members[i], b = members[j];
        auto ia = perRank.find(a), ib = perRank.find(b);
        if (!logs.count(a) || !logs.count(b))
          continue;
        static const std::map<uint64_t, const Record *> kEmpty;
        const auto &ra = ia == perRank.end() ? kEmpty : ia->second;
        const auto &rb = ib == perRank.end() ? kEmpty : ib->second;
        uint64_t lo = std::max(ra.empty() ? 0 : ra.begin()->first,
                               rb.empty() ? 0 : rb.begin()->first);
        uint64_t endA = ra.empty() ? 0 : ra.rbegin()->first;
        uint64_t endB = rb.empty() ? 0 : rb.rbegin()->first;
        for (uint64_t k = lo; k <= std::max(endA, endB); ++k) {
          auto pa = ra.find(k), pb = rb.find(k);
          if (pa != ra.end() && pb != rb.end()) {
            if (pa->second->op != pb->second->op) {
              consider(std::min(pa->second->seq, pb->second->seq),
                       "rank " + std::to_string(a) + "'s " +
                           ordinal(pa->second->seq) + " op is " +
                           readable(w, *pa->second) + ", rank " +
                           std::to_string(b) + "'s is " +
                           readable(w, *pb->second) + " (the " + ordinal(k) +
                           " over that group on both)");
              break;
            }
            continue;
          }
          // One of them went on alone.
          const Record *on = pa != ra.end() ? pa->second
                             : pb != rb.end() ? pb->second
                                              : nullptr;
          if (!on)
            continue;
          int ahead = pa != ra.end() ? a : b, behind = ahead == a ? b : a;
          uint64_t issued = ahead == a ? endB : endA;
          consider(on->seq, "rank " + std::to_string(ahead) + "'s " +
                                ordinal(on->seq) + " op, " + readable(w, *on) +
                                ", is the " + ordinal(k) +
                                " over that group; rank " +
                                std::to_string(behind) + " stopped after " +
                                std::to_string(issued) + " there");
          break;
        }
      }
  }
  std::vector<std::string> out;
  if (best.order != UINT64_MAX)
    out.push_back("cross-check: " + best.text);
  return out;
}

void LogWorld::onFailure() {
  std::vector<Record> mine;
  {
    std::lock_guard<std::mutex> l(mu);
    if (reported)
      return;
    reported = true;
    mine.assign(ring.begin(), ring.end());
  }
  std::vector<std::string> lines;
  size_t from = mine.size() > kShown ? mine.size() - kShown : 0;
  lines.push_back("rank " + std::to_string(rank) + "'s last " +
                  std::to_string(mine.size() - from) + " operation" +
                  (mine.size() - from == 1 ? "" : "s") + " (of " +
                  std::to_string(seq) + "):");
  for (size_t i = from; i < mine.size(); ++i) {
    const Record &r = mine[i];
    const char *state = r.state == 'D'   ? "done"
                        : r.state == 'F' ? "FAILED"
                                         : "not finished";
    lines.push_back("  " + ordinal(r.seq) + ": " + readable(*this, r) + ": " +
                    state);
  }
  // Publish, then read what the others publish for a moment: every rank
  // that fails does so at about the same time.
  std::map<int, std::vector<Record>> logs;
  logs[rank] = mine;
  if (store && size > 1) {
    std::string text;
    for (const Record &r : mine)
      text += serialize(r) + "\n";
    std::string keys = prefix + "oplog/";
    if (store->set(keys + std::to_string(rank), text)) {
      auto deadline = Clock::now() + std::min<milliseconds>(
                                          timeout, milliseconds(1500));
      for (bool first = true; first || Clock::now() < deadline; first = false) {
        bool all = true, storeOk = true;
        for (int r = 0; r < size && storeOk; ++r) {
          if (logs.count(r))
            continue;
          std::string v;
          bool found = false;
          if (!store->check(keys + std::to_string(r), v, found)) {
            storeOk = false;
            break;
          }
          if (!found) {
            all = false;
            continue;
          }
          std::vector<Record> &log = logs[r];
          std::stringstream in(v);
          std::string line;
          while (std::getline(in, line)) {
            Record rec;
            if (deserialize(line, rec))
              log.push_back(rec);
          }
        }
        if (all || !storeOk)
          break;
        std::this_thread::sleep_for(milliseconds(50));
      }
    }
  }
  std::string silent;
  for (int r = 0; r < size; ++r)
    if (!logs.count(r))
      silent += (silent.empty() ? "" : ", ") + std::to_string(r);
  for (std::string &l : crossCheck(*this, logs))
    lines.push_back(std::move(l));
  if (!silent.empty())
    lines.push_back("rank" + std::string(silent.find(',') == std::string::npos
                                             ? " "
                                             : "s ") +
                    silent +
                    " published no log (dead, hung, stopped or unreachable)");
  std::lock_guard<std::mutex> l(mu);
  report = std::move(lines);
}

/// A check failure's text: the two descriptions.
Status mismatch(LogWorld &w, const Record &r, int other,
                const std::string &theirs) {
  return Status::error("--check-collectives: rank " + std::to_string(w.rank) +
                       "'s " + ordinal(r.seq) + " op is " + readable(w, r) +
                       ", rank " + std::to_string(other) + "'s is " + theirs);
}

class LoggedComm : public Communicator {
public:
  LoggedComm(LogWorld *w, Communicator *inner) : w(w), inner(inner) {
    group = joinRanks(inner->worldRanks());
  }

  std::unique_ptr<LogWorld> ownedWorld;
  std::unique_ptr<Communicator> ownedInner;

  /// The lines of the first failure's report (empty before one).
  std::vector<std::string> report() const {
    std::lock_guard<std::mutex> l(w->mu);
    return w->report;
  }

  const char *backend() const override { return inner->backend(); }
  int rank() const override { return inner->rank(); }
  int size() const override { return inner->size(); }
  const std::vector<int> &worldRanks() const override {
    return inner->worldRanks();
  }

  Status subgroup(const std::vector<int> &ranks, Communicator *&out) override {
    Communicator *sub = nullptr;
    TSL_RETURN_IF_ERROR(inner->subgroup(ranks, sub));
    if (sub == inner) {
      out = this;
      return Status::ok();
    }
    std::lock_guard<std::mutex> l(w->mu);
    auto &slot = w->groups[sub->worldRanks()];
    if (!slot)
      slot = std::make_unique<LoggedComm>(w, sub);
    out = slot.get();
    return Status::ok();
  }

  Status allReduce(const TensorView &in, const TensorView &out,
                   ReduceKind kind) override {
    return collective(std::string("all_reduce ") + reduceKindName(kind), in,
                      [&] { return inner->allReduce(in, out, kind); });
  }
  Status allGather(const TensorView &in, const TensorView &out,
                   int64_t dim) override {
    return collective("all_gather dim " + std::to_string(dim), in,
                      [&] { return inner->allGather(in, out, dim); });
  }
  Status reduceScatter(const TensorView &in, const TensorView &out,
                       ReduceKind kind, int64_t dim) override {
    return collective(std::string("reduce_scatter ") + reduceKindName(kind) +
                          " dim " + std::to_string(dim),
                      in, [&] {
                        return inner->reduceScatter(in, out, kind, dim);
                      });
  }
  Status allToAll(const TensorView &in, const TensorView &out, int64_t splitDim,
                  int64_t concatDim) override {
    return collective("all_to_all split " + std::to_string(splitDim) +
                          " concat " + std::to_string(concatDim),
                      in, [&] {
                        return inner->allToAll(in, out, splitDim, concatDim);
                      });
  }
  Status collectivePermute(const TensorView &in, const TensorView &out,
                           const std::vector<std::pair<int, int>> &pairs) override {
    std::string p;
    for (auto [a, b] : pairs)
      p += (p.empty() ? "" : " ") + std::to_string(a) + ">" + std::to_string(b);
    return collective("collective_permute (" + p + ")", in, [&] {
      return inner->collectivePermute(in, out, pairs);
    });
  }
  Status broadcast(const TensorView &in, const TensorView &out,
                   int root) override {
    return collective("broadcast root " + std::to_string(root), out,
                      [&] { return inner->broadcast(in, out, root); });
  }
  Status barrier() override {
    return collective("barrier", nullptr, [&] { return inner->barrier(); });
  }

  Status send(const TensorView &in, int peer, int64_t tag) override {
    Record r = pointToPoint("send", in, worldRank(), worldOf(peer), tag);
    uint64_t id = w->issue(r);
    if (w->options.check) {
      std::string d = r.op.substr(r.op.find(' ') + 1) + "\n" +
                      std::to_string(r.seq) + "\n" + readable(*w, r);
      d.resize(kDescBytes, '\0');
      TensorView dv(d.data(), DType::Bool,
                    Shape{static_cast<int64_t>(kDescBytes)});
      if (Status s = inner->send(dv, peer, kCheckTag | tag); !s)
        return done(id, s);
    }
    return done(id, inner->send(in, peer, tag));
  }
  Status recv(const TensorView &out, int peer, int64_t tag) override {
    Record r = pointToPoint("recv", out, worldOf(peer), worldRank(), tag);
    uint64_t id = w->issue(r);
    if (Status s = checkRecv(r, peer, tag); !s)
      return done(id, s);
    return done(id, inner->recv(out, peer, tag));
  }
  Status irecv(const TensorView &out, int peer, int64_t tag,
               std::unique_ptr<P2PRequest> &req) override {
    Record r = pointToPoint("recv", out, worldOf(peer), worldRank(), tag);
    uint64_t id = w->issue(r);
    std::unique_ptr<P2PRequest> in;
    if (Status s = inner->irecv(out, peer, tag, in); !s)
      return done(id, s);
    req = std::make_unique<Request>(this, std::move(in), r, id, peer, tag);
    return Status::ok();
  }

  void setTimeout(std::chrono::milliseconds timeout) override {
    w->timeout = timeout;
    inner->setTimeout(timeout);
  }

private:
  struct Request : P2PRequest {
    Request(LoggedComm *c, std::unique_ptr<P2PRequest> in, Record r,
            uint64_t id, int peer, int64_t tag)
        : c(c), in(std::move(in)), r(std::move(r)), id(id), peer(peer),
          tag(tag) {}
    Status wait() override {
      if (Status s = c->checkRecv(r, peer, tag); !s) {
        (void)in->wait();
        return c->done(id, s);
      }
      return c->done(id, in->wait());
    }
    LoggedComm *c;
    std::unique_ptr<P2PRequest> in;
    Record r;
    uint64_t id;
    int peer;
    int64_t tag;
  };

  int worldRank() const { return inner->worldRanks()[inner->rank()]; }
  int worldOf(int peer) const {
    const std::vector<int> &wr = inner->worldRanks();
    return peer >= 0 && peer < static_cast<int>(wr.size()) ? wr[peer] : peer;
  }

  Record pointToPoint(const char *kind, const TensorView &t, int from, int to,
                      int64_t tag) {
    Record r;
    r.group = std::to_string(from) + ">" + std::to_string(to);
    r.tag = tag;
    r.op = std::string(kind) + " tag " + std::to_string(tag) + " " +
           dtypeName(t.dtype) + " " + shapeToString(t.shape);
    return r;
  }

  Status done(uint64_t id, Status s) {
    w->finish(id, s.isOk());
    if (!s)
      w->onFailure();
    return s;
  }

  /// --check-collectives for a recv: the sender's description first.
  Status checkRecv(const Record &r, int peer, int64_t tag) {
    if (!w->options.check)
      return Status::ok();
    std::string d(kDescBytes, '\0');
    TensorView dv(d.data(), DType::Bool, Shape{static_cast<int64_t>(kDescBytes)});
    TSL_RETURN_IF_ERROR(inner->recv(dv, peer, kCheckTag | tag));
    d.resize(std::min(d.size(), d.find('\0')));
    std::string theirs = d.substr(0, d.find('\n'));
    std::string mine = r.op.substr(r.op.find(' ') + 1);
    if (theirs == mine)
      return Status::ok();
    std::string text = d.substr(d.rfind('\n') + 1);
    std::string seq = d.substr(d.find('\n') + 1);
    seq = seq.substr(0, seq.find('\n'));
    return mismatch(*w, r, worldOf(peer),
                    "its " + ordinal(std::strtoull(seq.c_str(), nullptr, 10)) +
                        ", " + text);
  }

  template <typename F>
  Status collective(const std::string &kind, const TensorView &t, F &&run) {
    return collective(kind, &t, std::forward<F>(run));
  }
  /// Records the collective `kind` of `t` (none: a barrier), checks it
  /// against the other members' with --check-collectives, runs it.
  template <typename F>
  Status collective(const std::string &kind, const TensorView *t, F &&run) {
    Record r;
    r.group = group;
    r.op = t ? kind + " " + dtypeName(t->dtype) + " " + shapeToString(t->shape)
             : kind;
    uint64_t id = w->issue(r);
    if (w->options.check && inner->size() > 1) {
      // Everybody's description, side by side.
      int n = inner->size();
      std::string mine = r.op + "\n" + std::to_string(r.seq);
      mine.resize(kDescBytes, '\0');
      std::string all(kDescBytes * n, '\0');
      TensorView in(mine.data(), DType::Bool,
                    Shape{static_cast<int64_t>(kDescBytes)});
      TensorView out(all.data(), DType::Bool,
                     Shape{static_cast<int64_t>(kDescBytes) * n});
      if (Status s = inner->allGather(in, out, 0); !s)
        return done(id, s);
      for (int m = 0; m < n; ++m) {
        std::string d = all.substr(m * kDescBytes, kDescBytes);
        d.resize(std::min(d.size(), d.find('\0')));
        std::string op = d.substr(0, d.find('\n'));
        if (op == r.op)
          continue;
        uint64_t seq =
            std::strtoull(d.substr(d.find('\n') + 1).c_str(), nullptr, 10);
        return done(id, mismatch(*w, r, inner->worldRanks()[m],
                                 "its " + ordinal(seq) + ", " + op + " over " +
                                     w->groupText(inner->worldRanks())));
      }
    }
    return done(id, run());
  }

  LogWorld *w;
  Communicator *inner;
  std::string group;
};

} // namespace

Status createOpLogCommunicator(const CommOptions &o, const OpLogOptions &lo,
                               std::unique_ptr<Communicator> inner,
                               std::unique_ptr<Communicator> &out) {
  if (!inner)
    return Status::error("the op log needs a communicator to wrap");
  auto w = std::make_unique<LogWorld>();
  w->options = lo;
  if (w->options.capacity == 0)
    w->options.capacity = 1;
  w->store = o.store;
  w->prefix = o.prefix;
  w->rank = o.rank;
  w->size = o.size;
  w->timeout = o.timeout;
  auto c = std::make_unique<LoggedComm>(w.get(), inner.get());
  c->ownedWorld = std::move(w);
  c->ownedInner = std::move(inner);
  out = std::move(c);
  return Status::ok();
}

std::vector<std::string> opLogReport(Communicator *c) {
  auto *l = dynamic_cast<LoggedComm *>(c);
  if (!l)
    return {};
  // The world's report: any wrapper of the world reaches it through its
  // LogWorld; the world wrapper owns it.
  return l->report();
}

} // namespace tessel::runtime
