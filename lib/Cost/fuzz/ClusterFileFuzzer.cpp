//===- ClusterFileFuzzer.cpp - libFuzzer target for cluster files ---------===//
//
// The input is a cluster file as `tesselc --cluster FILE` reads it
// (docs/auto-plan.md). Every input must end in a cluster or an error; a
// cluster that parses must validate, cost a collective to a finite time,
// and come back equal through printClusterFile and parseClusterFile (the
// writer the calibration uses). Any crash, signal, sanitizer report or
// abort is a bug.
//
//===----------------------------------------------------------------------===//
#include "tessel/Cost/ClusterFile.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {
[[noreturn]] void fail(const std::string &what) {
  std::fprintf(stderr, "cluster fuzzer: %s\n", what.c_str());
  std::abort();
}

bool sameLink(const tessel::cost::LinkSpec &a, const tessel::cost::LinkSpec &b) {
  return a.kind == b.kind && a.latency == b.latency &&
         a.bandwidth == b.bandwidth && a.asyncOverhead == b.asyncOverhead &&
         a.sharedLatency == b.sharedLatency &&
         a.allReduceBandwidth == b.allReduceBandwidth;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace tessel::cost;
  // A NUL-terminated copy, as llvm::MemoryBuffer gives the tools.
  const std::string text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<ClusterSpec> c = parseClusterFile(text, "fuzz.yaml");
  if (!c) {
    llvm::consumeError(c.takeError());
    return 0;
  }
  if (llvm::Error e = c->validate())
    fail("parsed, then refused by validate: " + llvm::toString(std::move(e)));
  double t = getCollectiveTime(Collective::AllReduce, 1e6,
                               c->getNumDevices(),
                               c->getGroupLink(c->getNumDevices(), 1));
  if (!std::isfinite(t) || t < 0)
    fail("an all_reduce costs " + std::to_string(t) + " s");
  const std::string printed = printClusterFile(*c);
  llvm::Expected<ClusterSpec> back = parseClusterFile(printed, "printed.yaml");
  if (!back)
    fail("the writer's output does not read back: " +
         llvm::toString(back.takeError()) + "\n" + printed);
  const DeviceSpec &d = c->device, &e = back->device;
  if (back->name != c->name || back->nodes != c->nodes ||
      back->devicesPerNode != c->devicesPerNode || e.name != d.name ||
      e.peakFlopsF32 != d.peakFlopsF32 || e.peakFlopsBF16 != d.peakFlopsBF16 ||
      e.matmulEfficiency != d.matmulEfficiency ||
      e.convolutionEfficiency != d.convolutionEfficiency ||
      e.memoryBytes != d.memoryBytes ||
      e.memoryBandwidth != d.memoryBandwidth || e.opOverhead != d.opOverhead ||
      e.matmulSaturationDim != d.matmulSaturationDim ||
      e.opRates != d.opRates ||
      !sameLink(back->intraNode, c->intraNode) ||
      !sameLink(back->interNode, c->interNode))
    fail("the round trip changed a figure:\n" + printed);
  return 0;
}
