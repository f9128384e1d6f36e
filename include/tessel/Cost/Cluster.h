//===- Cluster.h - devices, links and collectives, in seconds ---*- C++ -*-===//
//
// The hardware half of Tessel's cost model (docs/auto-plan.md): what one
// device computes per second by kind of work, what a link moves, and what a
// collective over a group of devices costs by its algorithm. Plain C++ over
// LLVM Support: --predict, --plan=auto, --stages auto and the at-scale
// benches all read the same tables.
//
// Units: seconds, bytes, FLOP/s, bytes/s.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COST_CLUSTER_H
#define TESSEL_COST_CLUSTER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessel::cost {

/// The kinds of work a device runs at different fractions of its peak
/// (mlir::tessel::CostClass, folded: a convolution's backward ops are
/// convolutions).
enum class WorkClass { Matmul, Convolution, Elementwise };

/// The element type a kernel computes in.
enum class Precision { F32, BF16 };

struct DeviceSpec {
  std::string name;
  /// Dense peak FLOP/s (a multiply-add counts 2).
  double peakFlopsF32 = 0;
  double peakFlopsBF16 = 0;
  /// The fraction of peak a large GEMM and a convolution achieve.
  double matmulEfficiency = 1.0;
  double convolutionEfficiency = 1.0;
  /// Memory capacity in bytes and achievable bandwidth in bytes/s: bounds
  /// elementwise work (bytes read + written / bandwidth).
  double memoryBytes = 0;
  double memoryBandwidth = 0;
  /// Seconds every op costs beyond its FLOPs and bytes (kernel launch,
  /// dispatch).
  double opOverhead = 0;
  /// D0 of the GEMM saturation curve: a GEMM whose smallest dimension (M,
  /// N or the contraction K) is d runs at d / (d + D0) of the large-GEMM
  /// rate (a short K leaves each output tile's fixed prologue and epilogue
  /// unamortized, a short M or N its register tile part empty). 0: no
  /// curve.
  double matmulSaturationDim = 0;
  /// Measured rates of named non-GEMM kernels, in elements per second (of
  /// the op's largest operand or result), by op name without the dialect
  /// ("gelu", "adam_update"): such an op costs elements / rate +
  /// opOverhead instead of its bytes over memoryBandwidth. What the
  /// roofline misses on a CPU core: transcendental arithmetic (gelu's erf),
  /// strided access (transpose), an optimizer's several streams. Measured in
  /// a reference model's training steps (bench/calibrate_cpu.py); empty for
  /// the built-in devices.
  std::map<std::string, double> opRates;

  /// The FLOP/s `cls` runs at in `precision` (peak x efficiency; BF16 falls
  /// back to F32 where the device gives no BF16 peak).
  double getFlopRate(WorkClass cls, Precision precision) const;
  /// The rate of a GEMM whose smallest dimension is `dim`: the matmul rate
  /// x dim / (dim + matmulSaturationDim).
  double getMatmulRate(Precision precision, double dim) const;
  /// Seconds for an op of `flops` FLOPs that moves `bytes` through memory:
  /// the slower of its compute and its memory traffic, plus opOverhead; a
  /// matmul whose smallest dimension is `dim` (> 0) at getMatmulRate's.
  double getOpTime(WorkClass cls, Precision precision, double flops,
                   double bytes, double dim = 0) const;
};

/// Classes of link, for messages and cluster files.
enum class LinkKind { SharedMemory, Tcp, NVLink, InfiniBand, PCIe };
llvm::StringRef getLinkKindName(LinkKind kind);
std::optional<LinkKind> parseLinkKind(llvm::StringRef name);
/// Every kind's name, in the enum's order: "shm, tcp, ...".
std::string getLinkKindNames();

/// A link as each device sees it: latency per message and bandwidth in
/// bytes/s per direction per device.
struct LinkSpec {
  LinkKind kind = LinkKind::SharedMemory;
  double latency = 0;
  double bandwidth = 0;
  /// Seconds a send (a pipeline's activation or gradient) or an
  /// asynchronous collective (a gradient bucket, a prefetched gather) adds
  /// on a link that uses the ranks' cores: handing it to the rank's
  /// communication thread, which shares the core, and back. On shared
  /// memory only sends pay it: the runtime runs the collectives in place
  /// there. 0 where copy engines or NICs run it.
  double asyncOverhead = 0;
  /// Seconds per sync point of a collective when more ranks than devices
  /// share them (a rank sleeps, its core switches to another rank, caches
  /// refill), in place of `latency` x ranks/devices; 0: not measured (then
  /// that). bench/calibrate_cpu.py measures it on a reference model's
  /// oversubscribed steps.
  double sharedLatency = 0;
  /// Bytes/s at which an all_reduce's bytes move over a shared-memory link,
  /// where its staging (each member reduces its piece over every member's
  /// buffer, then copies every piece) moves them at another rate than an
  /// all_gather's or a reduce_scatter's; 0: `bandwidth`.
  /// bench/calibrate_cpu.py fits it on its back-to-back all_reduces.
  double allReduceBandwidth = 0;

  /// latency + bytes / bandwidth.
  double getTransferTime(double bytes) const;
  /// Whether the ranks' own cores move the bytes (shared memory, TCP): then
  /// a collective takes the core its rank computes on, and an asynchronous
  /// one cannot hide behind that rank's compute (NVLink, InfiniBand and
  /// PCIe move them beside it: copy engines, NICs).
  bool usesRankCores() const {
    return kind == LinkKind::SharedMemory || kind == LinkKind::Tcp;
  }
};

enum class Collective {
  AllReduce,
  AllGather,
  ReduceScatter,
  Broadcast,
  AllToAll,
  SendRecv
};
enum class CollectiveAlgorithm { Ring, Tree };

/// Seconds one collective takes over `ranks` devices joined by `link`.
/// `bytes` is the whole buffer: an all-reduce's operand, an all-gather's
/// result, a reduce-scatter's operand, the message of a broadcast or a
/// send. Ring: 2(n-1) steps of bytes/n for an all-reduce, n-1 for an
/// all-gather or reduce-scatter; tree: 2 log2(n) latencies with the
/// bandwidth term of a pipelined tree (2 x bytes). One rank costs nothing.
/// On a shared-memory link, the algorithm of runtime/comm's shm
/// communicator instead (Cluster.cpp's getSharedBufferCollectiveTime: two
/// sync points or one, bytes per member that do not grow with n), but for
/// all_to_all, which goes to its fallback.
double getCollectiveTime(Collective collective, double bytes, int64_t ranks,
                         const LinkSpec &link,
                         CollectiveAlgorithm algorithm =
                             CollectiveAlgorithm::Ring);

/// The range a cluster figure must lie in: wide enough for any machine (a
/// zettaFLOP/s device, an hour of latency), narrow enough that no time
/// computed from the figures overflows (a collective over a million devices
/// at 1 byte/s is still finite). Cluster files are untrusted input.
struct FigureRange {
  double min, max;
  /// `min` itself is refused: (min, max].
  bool minExclusive = false;
  /// 0 passes too (peak_flops_bf16: a device without bf16 arithmetic).
  bool zeroAllowed = false;
  bool contains(double v) const;
  /// "a number in [1, 1e+21]", for messages.
  std::string describe() const;
};

/// Whether `name` may key DeviceSpec::opRates: an op's name without its
/// dialect, [a-z0-9_]{1,64}.
bool isOpRateName(llvm::StringRef name);

namespace figure {
/// FLOP/s and bytes/s.
inline constexpr FigureRange kRate{1, 1e21};
/// A rate, or 0 for none.
inline constexpr FigureRange kOptionalRate{1, 1e21, false, true};
/// Bytes of memory: up to an exabyte.
inline constexpr FigureRange kBytes{1, 1e18};
/// Latencies and overheads.
inline constexpr FigureRange kSeconds{0, 3600};
inline constexpr FigureRange kFraction{0, 1, true};
/// A GEMM dimension.
inline constexpr FigureRange kDim{0, 1e6};
inline constexpr FigureRange kDevicesPerNode{1, 65536};
inline constexpr FigureRange kNodes{1, 1048576};
} // namespace figure

/// Devices in nodes: `devicesPerNode` joined by `intraNode`, nodes joined by
/// `interNode`.
struct ClusterSpec {
  std::string name;
  DeviceSpec device;
  int64_t devicesPerNode = 1;
  int64_t nodes = 1;
  LinkSpec intraNode;
  LinkSpec interNode;

  int64_t getNumDevices() const { return devicesPerNode * nodes; }
  /// The link a group of `groupSize` devices whose consecutive members are
  /// `stride` ranks apart (ranks numbered node by node) communicates over:
  /// the node's own link when the whole group lies in one node (always,
  /// with one node), else the inter-node one.
  const LinkSpec &getGroupLink(int64_t groupSize, int64_t stride) const;
  /// Checks that every figure lies in its range (figure::k*); the message
  /// names the field.
  llvm::Error validate() const;
};

/// The built-in clusters, by name: "a100" (DGX A100: 8 x A100-SXM4-80GB,
/// NVLink 3, 8 x 200 Gb/s HDR InfiniBand per node), "h100" (DGX H100:
/// NVLink 4, 8 x 400 Gb/s NDR), "h200" (as h100, 141 GB HBM3e), and "cpu"
/// (this class of machine: one rank per core over shared memory, nominal
/// figures; calibrate for real ones). `nodes` sets the node count.
std::optional<ClusterSpec> getBuiltinCluster(llvm::StringRef name,
                                             int64_t nodes = 1);
/// The built-in clusters' names.
std::vector<llvm::StringRef> getBuiltinClusterNames();

} // namespace tessel::cost

#endif // TESSEL_COST_CLUSTER_H
