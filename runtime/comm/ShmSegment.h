//===- ShmSegment.h - The shm communicator's shared memory -----*- C++ -*-===//
//
// Ranks of one host meet in a POSIX shared-memory segment: member 0 of a
// communicator creates it (shm_open, posix_fallocate so that a full /dev/shm
// fails here rather than by SIGBUS later, mmap), publishes its name through
// the store, the others map it, and once every member has said so through
// the store, member 0 unlinks it: nothing is left in /dev/shm, even after a
// crash. A subgroup gets a segment of its own the same way (openSegment).
//
// The segment (SegmentLayout) holds a SegmentHeader, then per member a
// control line (MemberLine: a counter of the sync points it passed, the
// number of peers asleep on it, its state, its pid) and two staging buffers
// ("slots"), each beginning with a ChunkHeader that says which collective
// the member is at; then, in groups of up to kMaxChannelMembers, one
// send/recv ring of kChannelBytes per ordered pair of members, behind its
// two ends (ChannelEnd).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_COMM_SHMSEGMENT_H
#define TESSEL_RUNTIME_COMM_SHMSEGMENT_H

#include "CommunicatorBase.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tessel::runtime::shm {

constexpr size_t kPage = 4096;
constexpr size_t kChunkHeaderBytes = 256;
constexpr size_t kDefaultSlotBytes = size_t(1) << 20;
constexpr int kMaxDims = 8;
/// send/recv rings: their bytes, and the largest group that has them
/// (n (n - 1) rings: 14 MiB for 8 members).
constexpr size_t kChannelBytes = 256 << 10;
constexpr int kMaxChannelMembers = 8;

static_assert(
    std::atomic<uint32_t>::is_always_lock_free &&
        std::atomic<int32_t>::is_always_lock_free,
    "the segment's atomics must be lock-free to work across processes");

struct SegmentHeader {
  uint64_t magic;
  uint32_t members;
  uint32_t reserved;
  uint64_t slotBytes;
  uint64_t totalBytes;
};

/// A member's state word.
enum : uint32_t { kRunning = 0, kLeft = 0xff };

/// One cache line per member, written by it (peers add to `waiters`).
struct alignas(64) MemberLine {
  /// Sync points passed; the futex word peers sleep on.
  std::atomic<uint32_t> counter;
  std::atomic<uint32_t> waiters;
  /// kRunning, kLeft (communicator destroyed), or 1 + the op that failed.
  std::atomic<uint32_t> state;
  std::atomic<int32_t> pid;
};
static_assert(sizeof(MemberLine) == 64, "one cache line per member");

enum Op : uint32_t {
  kAllReduce = 1,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kBarrier,
  kSend,
  kRecv
};

/// "all_reduce", ... by Op ("?" for another value).
const char *opName(uint32_t op);

/// What a member is doing, at the start of each of its buffers; equal on
/// every member of a collective (flags aside).
struct ChunkHeader {
  uint32_t op;
  uint32_t dtype;
  uint32_t kind;
  uint32_t flags; // barrier: this member used the fallback since the last one
  int64_t arg;    // dim or root
  uint32_t rank;  // of the shape
  uint32_t reserved;
  uint64_t shapeHash;
  int64_t dims[kMaxDims];

  bool sameCollective(const ChunkHeader &o) const {
    return op == o.op && dtype == o.dtype && kind == o.kind && arg == o.arg &&
           rank == o.rank && shapeHash == o.shapeHash;
  }
  /// "all_gather along dim 1 into f32 [4, 8]", for the mismatch messages.
  std::string describe() const;
};
static_assert(sizeof(ChunkHeader) <= kChunkHeaderBytes, "chunk header too big");

inline size_t roundUp(size_t x, size_t to) { return (x + to - 1) / to * to; }

/// One side of a send/recv ring: the bytes it has written (the sender) or
/// read (the receiver) so far, and the word the other side sleeps on.
struct alignas(64) ChannelEnd {
  std::atomic<uint64_t> bytes;
  std::atomic<uint32_t> seq;
  std::atomic<uint32_t> waiters;
};
static_assert(sizeof(ChannelEnd) == 64, "one cache line per side");

/// Where things are in a segment of `n` members with slots of `slot` bytes.
struct SegmentLayout {
  size_t lines = kPage;
  size_t buffers = 0;
  size_t bufferStride = 0;
  /// The send/recv rings, one per ordered pair: [sender end | receiver end
  /// | kChannelBytes of ring]; none beyond kMaxChannelMembers.
  size_t channels = 0;
  size_t channelStride = 0;
  int channelCount = 0;
  size_t total = 0;
  SegmentLayout(int n, size_t slot) {
    buffers = lines + roundUp(sizeof(MemberLine) * n, kPage);
    bufferStride = roundUp(kChunkHeaderBytes + slot, kPage);
    channels = buffers + bufferStride * 2 * n;
    channelStride = roundUp(2 * sizeof(ChannelEnd) + kChannelBytes, kPage);
    channelCount = n <= kMaxChannelMembers ? n * (n - 1) : 0;
    total = channels + channelStride * channelCount;
  }
};

/// A mapping, unmapped on destruction.
struct Mapping {
  char *base = nullptr;
  size_t bytes = 0;
  Mapping() = default;
  Mapping(const Mapping &) = delete;
  Mapping &operator=(const Mapping &) = delete;
  Mapping(Mapping &&o) noexcept : base(o.base), bytes(o.bytes) {
    o.base = nullptr;
  }
  Mapping &operator=(Mapping &&o) noexcept {
    std::swap(base, o.base);
    std::swap(bytes, o.bytes);
    return *this;
  }
  ~Mapping();
};

/// Shared by the world communicator and its subgroups, which are shm
/// communicators or the fallback's.
struct ShmWorld : comm::World {
  explicit ShmWorld(const CommOptions &options)
      : World(options), spin(!options.sharedCore) {}
  size_t slotBytes = kDefaultSlotBytes;
  /// Whether waits spin before they yield or sleep (CommOptions::sharedCore).
  bool spin;
  std::unique_ptr<Communicator> fallback;
};

/// Maps the segment of the group `members` (world ranks), this member at
/// `me`: member 0 creates it, every member maps it and says so through the
/// store, member 0 unlinks it once all have and publishes the verdict, which
/// every member returns (unless the store fails or times out).
Status openSegment(ShmWorld &w, const std::vector<int> &members, int me,
                   Mapping &out);

} // namespace tessel::runtime::shm

#endif // TESSEL_RUNTIME_COMM_SHMSEGMENT_H
