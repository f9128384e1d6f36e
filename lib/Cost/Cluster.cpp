//===- Cluster.cpp - devices, links and collectives -----------------------===//

#include "tessel/Cost/Cluster.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>

namespace tessel::cost {

double DeviceSpec::getFlopRate(WorkClass cls, Precision precision) const {
  double peak = precision == Precision::BF16 && peakFlopsBF16 > 0
                    ? peakFlopsBF16
                    : peakFlopsF32;
  switch (cls) {
  case WorkClass::Matmul:
    return peak * matmulEfficiency;
  case WorkClass::Convolution:
    return peak * convolutionEfficiency;
  case WorkClass::Elementwise:
    // Elementwise work is bound by memory (getOpTime); its arithmetic runs
    // at the vector units' rate, the F32 peak's GEMM fraction.
    return peakFlopsF32 * matmulEfficiency;
  }
  return peak;
}

double DeviceSpec::getMatmulRate(Precision precision, double dim) const {
  double rate = getFlopRate(WorkClass::Matmul, precision);
  return matmulSaturationDim > 0 && dim > 0
             ? rate * dim / (dim + matmulSaturationDim)
             : rate;
}

double DeviceSpec::getOpTime(WorkClass cls, Precision precision,
                             double flops, double bytes, double dim) const {
  double rate = cls == WorkClass::Matmul ? getMatmulRate(precision, dim)
                                         : getFlopRate(cls, precision);
  double compute = flops > 0 ? flops / rate : 0.0;
  double memory = bytes > 0 ? bytes / memoryBandwidth : 0.0;
  return std::max(compute, memory) + opOverhead;
}

/// Each link kind with its name, for both directions.
static constexpr std::pair<LinkKind, llvm::StringLiteral> kLinkKindNames[] = {
    {LinkKind::SharedMemory, "shm"}, {LinkKind::Tcp, "tcp"},
    {LinkKind::NVLink, "nvlink"},    {LinkKind::InfiniBand, "infiniband"},
    {LinkKind::PCIe, "pcie"},
};

llvm::StringRef getLinkKindName(LinkKind kind) {
  for (auto [k, name] : kLinkKindNames)
    if (k == kind)
      return name;
  return "?";
}

std::optional<LinkKind> parseLinkKind(llvm::StringRef name) {
  for (auto [k, n] : kLinkKindNames)
    if (n == name)
      return k;
  return std::nullopt;
}

std::string getLinkKindNames() {
  std::string names;
  for (auto [k, name] : kLinkKindNames)
    names += (names.empty() ? "" : ", ") + name.str();
  return names;
}

double LinkSpec::getTransferTime(double bytes) const {
  return latency + bytes / bandwidth;
}

namespace {

/// Seconds of a collective among ranks that share one memory, as the shm
/// communicator runs it: every member stages its buffer where all can read
/// it, and meets the others at two sync points (all_reduce: staged,
/// reduced) or one (the others). Unlike a ring's, neither the latencies
/// nor the bytes per member grow with n: 4 ranks on the ring's formula
/// predicted a tensor-parallel GPT-2 step 31 % slow. None for all_to_all
/// and send/recv, which do not run in the shared buffers.
std::optional<double> getSharedBufferCollectiveTime(Collective collective,
                                                    double bytes, double n,
                                                    double a, double b,
                                                    double ar) {
  // Per member, in bytes of memory traffic: an all_reduce writes B, reads
  // its 1/n of every member's B, writes that, reads the B of the pieces:
  // ~4B at any n; an all_gather writes B/n and reads B; a reduce_scatter
  // writes B, reads B and writes B/n. Each is scaled to equal the ring at
  // n = 2 (where the two algorithms move the same), so that one calibrated
  // bandwidth serves both. Measured, an all_reduce moves its bytes faster
  // than that scaling says (on a 2-core VM 1.3-1.6x an all_gather's time of
  // the same bytes, not 2x): its own bandwidth, `ar`, where given.
  switch (collective) {
  case Collective::AllReduce:
    return 2.0 * a + bytes / (ar > 0 ? ar : b);
  case Collective::AllGather:
    return a + (bytes + bytes / n) / (3.0 * b);
  case Collective::ReduceScatter:
    return a + (2.0 * bytes + bytes / n) / (5.0 * b);
  case Collective::Broadcast:
    return a + bytes / b;
  case Collective::AllToAll:
  case Collective::SendRecv:
    break;
  }
  return std::nullopt;
}

} // namespace

double getCollectiveTime(Collective collective, double bytes, int64_t ranks,
                         const LinkSpec &link,
                         CollectiveAlgorithm algorithm) {
  if (ranks <= 1 || bytes <= 0)
    return 0.0;
  const double n = double(ranks);
  const double a = link.latency, b = link.bandwidth;
  if (link.kind == LinkKind::SharedMemory)
    if (std::optional<double> t = getSharedBufferCollectiveTime(
            collective, bytes, n, a, b, link.allReduceBandwidth))
      return *t;
  // One ring step moves a 1/n chunk between neighbours.
  auto ringSteps = [&](double steps) { return steps * (a + bytes / n / b); };
  const double treeDepth = std::ceil(std::log2(n));
  switch (collective) {
  case Collective::AllReduce:
    if (algorithm == CollectiveAlgorithm::Tree)
      return 2.0 * treeDepth * a + 2.0 * bytes / b;
    return ringSteps(2.0 * (n - 1.0));
  case Collective::AllGather:
  case Collective::ReduceScatter:
  case Collective::AllToAll:
    return ringSteps(n - 1.0);
  case Collective::Broadcast:
    if (algorithm == CollectiveAlgorithm::Tree)
      return treeDepth * a + bytes / b;
    // A pipelined chain: the message streams through n - 1 hops.
    return (n - 1.0) * a + bytes / b;
  case Collective::SendRecv:
    return link.getTransferTime(bytes);
  }
  return 0.0;
}

const LinkSpec &ClusterSpec::getGroupLink(int64_t groupSize,
                                          int64_t stride) const {
  int64_t span = (std::max<int64_t>(groupSize, 1) - 1) *
                     std::max<int64_t>(stride, 1) +
                 1;
  // One node holds every rank (more ranks than devices share them).
  return span <= devicesPerNode || nodes == 1 ? intraNode : interNode;
}

bool FigureRange::contains(double v) const {
  if (!std::isfinite(v))
    return false;
  if (zeroAllowed && v == 0)
    return true;
  return (minExclusive ? v > min : v >= min) && v <= max;
}

std::string FigureRange::describe() const {
  auto number = [](double v) {
    char buffer[32];
    snprintf(buffer, sizeof(buffer), "%g", v);
    return std::string(buffer);
  };
  return (zeroAllowed ? "0 or a number in " : "a number in ") +
         std::string(minExclusive ? "(" : "[") + number(min) + ", " +
         number(max) + "]";
}

llvm::Error ClusterSpec::validate() const {
  auto check = [&](llvm::StringRef field, double value,
                   const FigureRange &range) -> llvm::Error {
    if (range.contains(value))
      return llvm::Error::success();
    char shown[32];
    snprintf(shown, sizeof(shown), "%g", value);
    return llvm::createStringError("cluster '" + name + "': " + field +
                                   " is " + shown + "; it must be " +
                                   range.describe());
  };
  using namespace figure;
  for (auto [field, value, range] :
       {std::tuple<llvm::StringRef, double, FigureRange>{
            "device.peak_flops_f32", device.peakFlopsF32, kRate},
        {"device.peak_flops_bf16", device.peakFlopsBF16, kOptionalRate},
        {"device.matmul_efficiency", device.matmulEfficiency, kFraction},
        {"device.convolution_efficiency", device.convolutionEfficiency,
         kFraction},
        {"device.memory_bytes", device.memoryBytes, kBytes},
        {"device.memory_bandwidth", device.memoryBandwidth, kRate},
        {"device.op_overhead", device.opOverhead, kSeconds},
        {"device.matmul_saturation_dim", device.matmulSaturationDim, kDim},
        {"devices_per_node", double(devicesPerNode), kDevicesPerNode},
        {"nodes", double(nodes), kNodes},
        {"intra_node.latency", intraNode.latency, kSeconds},
        {"intra_node.bandwidth", intraNode.bandwidth, kRate},
        {"intra_node.async_overhead", intraNode.asyncOverhead, kSeconds},
        {"intra_node.shared_latency", intraNode.sharedLatency, kSeconds},
        {"intra_node.all_reduce_bandwidth", intraNode.allReduceBandwidth,
         kOptionalRate},
        {"inter_node.latency", interNode.latency, kSeconds},
        {"inter_node.bandwidth", interNode.bandwidth, kRate},
        {"inter_node.async_overhead", interNode.asyncOverhead, kSeconds},
        {"inter_node.shared_latency", interNode.sharedLatency, kSeconds},
        {"inter_node.all_reduce_bandwidth", interNode.allReduceBandwidth,
         kOptionalRate}})
    if (llvm::Error e = check(field, value, range))
      return e;
  for (const auto &[op, rate] : device.opRates) {
    if (!isOpRateName(op))
      return llvm::createStringError(
          "cluster '" + name + "': device.op_rates names '" + op +
          "'; an op name is lower-case letters, digits and '_' (at most 64)");
    if (llvm::Error e = check("device.op_rates." + op, rate, kRate))
      return e;
  }
  return llvm::Error::success();
}

bool isOpRateName(llvm::StringRef name) {
  return !name.empty() && name.size() <= 64 &&
         llvm::all_of(name, [](char ch) {
           return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
                  ch == '_';
         });
}

namespace {

constexpr double kGB = 1e9;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
/// D0 of the GEMM saturation curve (the GEMM's smallest dimension d runs
/// at d / (d + D0) of the large-GEMM rate). A GPU kernel's output tile pays
/// a fixed prologue (filling the operand pipeline) and epilogue (writing
/// the tile) worth about two to four 32/64-deep k-steps of a 3-4-stage
/// pipelined kernel: 128. A CPU core's microkernel: 10 (oneDNN on Zen 4
/// runs a GEMM whose smallest dimension is 8 at about a third of its
/// large-GEMM rate, 32 at 70-80 %; bench/calibrate_cpu.py measures it).
constexpr double kGpuSaturationDim = 128;
constexpr double kCpuSaturationDim = 10;

/// A DGX node of 8 GPUs: NVLink inside, one InfiniBand NIC per GPU across.
ClusterSpec makeDgx(llvm::StringRef name, DeviceSpec device,
                    double nvlinkBytesPerSecond, double nicBitsPerSecond) {
  ClusterSpec c;
  c.name = name.str();
  c.device = std::move(device);
  c.devicesPerNode = 8;
  c.intraNode = {LinkKind::NVLink, 5e-6, nvlinkBytesPerSecond};
  c.interNode = {LinkKind::InfiniBand, 1e-5, nicBitsPerSecond / 8.0};
  return c;
}

} // namespace

// Published figures (dense, per direction where a link's is quoted both
// ways): A100-SXM4-80GB 19.5 TFLOP/s f32, 312 bf16, 2039 GB/s HBM2e,
// NVLink 3 600 GB/s both ways; H100-SXM5 67 f32, 989 bf16, 3.35 TB/s
// HBM3, NVLink 4 900 GB/s both ways; H200 as H100 with 141 GB at 4.8 TB/s.
// The efficiencies are what a large GEMM reaches (cuBLAS on A100: about
// 80 % of the tensor-core peak; docs/auto-plan.md).
std::optional<ClusterSpec> getBuiltinCluster(llvm::StringRef name,
                                             int64_t nodes) {
  std::optional<ClusterSpec> c;
  if (name == "a100") {
    c = makeDgx(name,
                {"A100-SXM4-80GB", 19.5e12, 312e12, 0.8, 0.6, 80 * kGiB,
                 2039 * kGB * 0.9, 5e-6, kGpuSaturationDim},
                300 * kGB, 200e9);
  } else if (name == "h100") {
    c = makeDgx(name,
                {"H100-SXM5-80GB", 67e12, 989e12, 0.75, 0.55, 80 * kGiB,
                 3350 * kGB * 0.9, 5e-6, kGpuSaturationDim},
                450 * kGB, 400e9);
  } else if (name == "h200") {
    c = makeDgx(name,
                {"H200-SXM-141GB", 67e12, 989e12, 0.75, 0.55, 141 * kGB,
                 4800 * kGB * 0.9, 5e-6, kGpuSaturationDim},
                450 * kGB, 400e9);
  } else if (name == "cpu") {
    // One rank per core of a current x86-64 server core: nominal; a
    // calibration run replaces these.
    ClusterSpec cpu;
    cpu.name = "cpu";
    cpu.device = {"x86-64 core", 1e11, 0, 0.5, 0.4, 4 * kGiB, 1e10, 2e-6,
                  kCpuSaturationDim};
    cpu.devicesPerNode = 64;
    cpu.intraNode = {LinkKind::SharedMemory, 5e-6, 5 * kGB};
    cpu.interNode = {LinkKind::Tcp, 5e-5, 1.25 * kGB};
    c = std::move(cpu);
  }
  if (c)
    c->nodes = std::max<int64_t>(nodes, 1);
  return c;
}

std::vector<llvm::StringRef> getBuiltinClusterNames() {
  return {"a100", "h100", "h200", "cpu"};
}

} // namespace tessel::cost
