//===- ClusterFileTest.cpp - cluster files in YAML ------------------------===//

#include "tessel/Cost/ClusterFile.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

using namespace tessel::cost;

namespace {

const char *kFull = R"(name: two-boxes
devices_per_node: 4
nodes: 2
device:
  name: box
  peak_flops_f32: 1e12
  peak_flops_bf16: 2e12
  matmul_efficiency: 0.5
  convolution_efficiency: 0.25
  memory_bytes: 16e9
  memory_bandwidth: 1e11
  op_overhead: 1e-6
intra_node: {kind: shm, latency: 2e-6, bandwidth: 5e9, shared_latency: 3e-5, all_reduce_bandwidth: 7e9}
inter_node:
  kind: tcp
  latency: 5e-5
  bandwidth: 1.25e9
)";

/// The message parseClusterFile gives for `text`, or "" when it parses.
std::string errorOf(const std::string &text) {
  llvm::Expected<ClusterSpec> c = parseClusterFile(text, "bad.yaml");
  if (c)
    return "";
  return llvm::toString(c.takeError());
}

TEST(CostClusterFile, ReadsEveryField) {
  llvm::Expected<ClusterSpec> c = parseClusterFile(kFull, "f.yaml");
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->name, "two-boxes");
  EXPECT_EQ(c->devicesPerNode, 4);
  EXPECT_EQ(c->nodes, 2);
  EXPECT_EQ(c->getNumDevices(), 8);
  EXPECT_EQ(c->device.name, "box");
  EXPECT_EQ(c->device.peakFlopsF32, 1e12);
  EXPECT_EQ(c->device.peakFlopsBF16, 2e12);
  EXPECT_EQ(c->device.matmulEfficiency, 0.5);
  EXPECT_EQ(c->device.convolutionEfficiency, 0.25);
  EXPECT_EQ(c->device.memoryBytes, 16e9);
  EXPECT_EQ(c->device.memoryBandwidth, 1e11);
  EXPECT_EQ(c->device.opOverhead, 1e-6);
  EXPECT_EQ(c->intraNode.kind, LinkKind::SharedMemory);
  EXPECT_EQ(c->intraNode.latency, 2e-6);
  EXPECT_EQ(c->intraNode.bandwidth, 5e9);
  EXPECT_EQ(c->intraNode.sharedLatency, 3e-5);
  EXPECT_EQ(c->interNode.kind, LinkKind::Tcp);
  EXPECT_EQ(c->interNode.sharedLatency, 0.0); // optional: not measured
  EXPECT_EQ(c->interNode.latency, 5e-5);
  EXPECT_EQ(c->interNode.bandwidth, 1.25e9);
}

TEST(CostClusterFile, BaseStartsFromABuiltinAndOverrides) {
  llvm::Expected<ClusterSpec> c = parseClusterFile(
      "base: h100\nnodes: 16\ndevice:\n  matmul_efficiency: 0.6\n"
      "inter_node:\n  bandwidth: 40e9\n",
      "f.yaml");
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  std::optional<ClusterSpec> h100 = getBuiltinCluster("h100");
  EXPECT_EQ(c->nodes, 16);
  EXPECT_EQ(c->getNumDevices(), 128);
  EXPECT_EQ(c->device.matmulEfficiency, 0.6);
  EXPECT_EQ(c->interNode.bandwidth, 40e9);
  // Everything else is the built-in's.
  EXPECT_EQ(c->device.peakFlopsBF16, h100->device.peakFlopsBF16);
  EXPECT_EQ(c->device.memoryBytes, h100->device.memoryBytes);
  EXPECT_EQ(c->interNode.latency, h100->interNode.latency);
  EXPECT_EQ(c->intraNode.bandwidth, h100->intraNode.bandwidth);
  EXPECT_EQ(c->name, "h100");
}

TEST(CostClusterFile, WriterRoundTrips) {
  for (llvm::StringRef name : getBuiltinClusterNames()) {
    ClusterSpec c = *getBuiltinCluster(name, 3);
    std::string text = printClusterFile(c);
    llvm::Expected<ClusterSpec> back = parseClusterFile(text, "w.yaml");
    ASSERT_TRUE(bool(back)) << name.str() << ": "
                            << llvm::toString(back.takeError()) << "\n"
                            << text;
    EXPECT_EQ(back->name, c.name);
    EXPECT_EQ(back->nodes, 3);
    EXPECT_EQ(back->devicesPerNode, c.devicesPerNode);
    EXPECT_EQ(back->device.name, c.device.name);
    EXPECT_EQ(back->device.peakFlopsF32, c.device.peakFlopsF32);
    EXPECT_EQ(back->device.peakFlopsBF16, c.device.peakFlopsBF16);
    EXPECT_EQ(back->device.matmulEfficiency, c.device.matmulEfficiency);
    EXPECT_EQ(back->device.memoryBytes, c.device.memoryBytes);
    EXPECT_EQ(back->device.memoryBandwidth, c.device.memoryBandwidth);
    EXPECT_EQ(back->device.opOverhead, c.device.opOverhead);
    EXPECT_EQ(back->intraNode.kind, c.intraNode.kind);
    EXPECT_EQ(back->interNode.bandwidth, c.interNode.bandwidth);
    EXPECT_EQ(back->intraNode.sharedLatency, c.intraNode.sharedLatency);
  }
  // A measured shared_latency is written and read back.
  llvm::Expected<ClusterSpec> full = parseClusterFile(kFull, "f.yaml");
  ASSERT_TRUE(bool(full)) << llvm::toString(full.takeError());
  llvm::Expected<ClusterSpec> back =
      parseClusterFile(printClusterFile(*full), "w.yaml");
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->intraNode.sharedLatency, 3e-5);
  EXPECT_EQ(back->intraNode.allReduceBandwidth, 7e9);
  EXPECT_EQ(back->interNode.allReduceBandwidth, 0.0); // optional: bandwidth
}

// Measured kernel rates (device.op_rates, bench/calibrate_cpu.py): read,
// written back, and refused where a name or a rate is not one.
TEST(CostClusterFile, OpRatesRoundTrip) {
  llvm::Expected<ClusterSpec> c = parseClusterFile(
      "base: cpu\ndevice:\n  op_rates:\n    gelu: 7.5e8\n"
      "    adam_update: 4e8\n",
      "r.yaml");
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->device.opRates,
            (std::map<std::string, double>{{"adam_update", 4e8},
                                           {"gelu", 7.5e8}}));
  std::string text = printClusterFile(*c);
  llvm::Expected<ClusterSpec> back = parseClusterFile(text, "w.yaml");
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError()) << "\n" << text;
  EXPECT_EQ(back->device.opRates, c->device.opRates);
  // None: nothing written.
  EXPECT_EQ(printClusterFile(*getBuiltinCluster("h100")).find("op_rates"),
            std::string::npos);

  const std::pair<std::string, std::string> cases[] = {
      {"base: cpu\ndevice: {op_rates: {gelu: 0}}\n",
       "device.op_rates.gelu is '0'; it must be a number in [1, 1e+21] "
       "(elements per second)"},
      {"base: cpu\ndevice: {op_rates: {gelu: fast}}\n",
       "device.op_rates.gelu is 'fast'"},
      {"base: cpu\ndevice: {op_rates: {tessel.gelu: 1e9}}\n",
       "'device.op_rates.tessel.gelu': an op name is lower-case letters, "
       "digits and '_' (at most 64), without the dialect"},
      {"base: cpu\ndevice: {op_rates: {gelu: 1e9, gelu: 2e9}}\n",
       "'device.op_rates.gelu' is given twice"},
      {"base: cpu\ndevice: {op_rates: 1e9}\n",
       "'device.op_rates' must be a mapping of op names to elements per "
       "second"},
      {"base: cpu\ndevice: {op_rates: {gelu: [1e9]}}\n",
       "'device.op_rates.gelu' must be a single value"},
  };
  for (const auto &[text, want] : cases) {
    std::string got = errorOf(text);
    EXPECT_NE(got.find(want), std::string::npos)
        << "file:\n" << text << "\nwanted: " << want << "\ngot: " << got;
  }
  // validate() holds the same rules for a spec built in code.
  ClusterSpec bad = *getBuiltinCluster("cpu");
  bad.device.opRates["Gelu"] = 1e9;
  llvm::Error e = bad.validate();
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("device.op_rates names 'Gelu'"),
            std::string::npos);
}

// Any name that reads in writes back to itself, whatever its characters:
// written as they were, a U+FEFF ended the scalar on reading back (the
// cluster fuzzer's find).
TEST(CostClusterFile, NamesRoundTrip) {
  for (const char *name :
       {"plain", "it's", "a \"quoted\" \\ name", "\xEF\xBB\xBF" "bom",
        "caf\xC3\xA9", "\xE2\x80\xA8sep", "\xF0\x9F\x98\x80", "# not a comment",
        "- not a list", "*not-an-alias", "&anchor", "{}", "  padded  "}) {
    ClusterSpec c = *getBuiltinCluster("h100");
    c.name = name;
    c.device.name = name;
    std::string text = printClusterFile(c);
    llvm::Expected<ClusterSpec> back = parseClusterFile(text, "w.yaml");
    ASSERT_TRUE(bool(back)) << name << ": "
                            << llvm::toString(back.takeError()) << "\n"
                            << text;
    // The reader trims a name's blanks.
    EXPECT_EQ(back->name, llvm::StringRef(name).trim().str()) << text;
    EXPECT_EQ(back->device.name, llvm::StringRef(name).trim().str()) << text;
  }
}

TEST(CostClusterFile, WritesAndLoadsAFile) {
  llvm::SmallString<64> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("cluster", "yaml", path));
  ClusterSpec c = *getBuiltinCluster("a100", 2);
  ASSERT_FALSE(bool(writeClusterFile(c, path)));
  llvm::Expected<ClusterSpec> back = loadClusterFile(path);
  llvm::sys::fs::remove(path);
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->getNumDevices(), 16);
  EXPECT_EQ(back->interNode.bandwidth, c.interNode.bandwidth);
}

// The shipped examples hold the built-ins' figures, written out.
TEST(CostClusterFile, ExamplesMatchTheBuiltins) {
  for (auto [file, builtin] : {std::pair<const char *, const char *>{
                                   "a100x8.yaml", "a100"},
                               {"h100x8.yaml", "h100"},
                               {"h200x8.yaml", "h200"}}) {
    std::string path =
        std::string(TESSEL_SOURCE_DIR) + "/examples/clusters/" + file;
    llvm::Expected<ClusterSpec> c = loadClusterFile(path);
    ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
    ClusterSpec b = *getBuiltinCluster(builtin);
    EXPECT_EQ(c->getNumDevices(), 8) << file;
    EXPECT_DOUBLE_EQ(c->device.peakFlopsF32, b.device.peakFlopsF32) << file;
    EXPECT_DOUBLE_EQ(c->device.peakFlopsBF16, b.device.peakFlopsBF16) << file;
    EXPECT_DOUBLE_EQ(c->device.matmulEfficiency, b.device.matmulEfficiency);
    EXPECT_DOUBLE_EQ(c->device.memoryBytes, b.device.memoryBytes) << file;
    EXPECT_NEAR(c->device.memoryBandwidth, b.device.memoryBandwidth,
                1e-6 * b.device.memoryBandwidth)
        << file;
    EXPECT_DOUBLE_EQ(c->intraNode.bandwidth, b.intraNode.bandwidth) << file;
    EXPECT_DOUBLE_EQ(c->interNode.bandwidth, b.interNode.bandwidth) << file;
    EXPECT_DOUBLE_EQ(c->interNode.latency, b.interNode.latency) << file;
  }
}

TEST(CostClusterFile, RefusesBadInput) {
  auto replace = [](std::string text, const std::string &from,
                    const std::string &to) {
    size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  std::string full = kFull;
  // Each bad file and a piece its one message must hold.
  const std::pair<std::string, std::string> cases[] = {
      {replace(full, "peak_flops_f32: 1e12", "peak_flops_f32: -1"),
       "bad.yaml:6: device.peak_flops_f32 is '-1'; it must be a number in "
       "[1, 1e+21]"},
      {replace(full, "memory_bandwidth: 1e11", "memory_bandwidth: nan"),
       "bad.yaml:11: device.memory_bandwidth is 'nan'"},
      {replace(full, "matmul_efficiency: 0.5", "matmul_efficiency: 1.5"),
       "device.matmul_efficiency is '1.5'; it must be a number in (0, 1]"},
      {replace(full, "latency: 5e-5", "latency: -5e-5"),
       "inter_node.latency is '-5e-5'; it must be a number in [0, 3600]"},
      {replace(full, "bandwidth: 1.25e9", "bandwidth: fast"),
       "inter_node.bandwidth is 'fast'"},
      {replace(full, "shared_latency: 3e-5", "shared_latency: -3e-5"),
       "intra_node.shared_latency is '-3e-5'; it must be a number in "
       "[0, 3600]"},
      {replace(full, "all_reduce_bandwidth: 7e9", "all_reduce_bandwidth: -1"),
       "intra_node.all_reduce_bandwidth is '-1'"},
      {replace(full, "nodes: 2", "nodes: 1.5"), "nodes is '1.5'"},
      {replace(full, "devices_per_node: 4", "devices_per_node: 0"),
       "devices_per_node is '0'; it must be a whole number in [1, 65536]"},
      {replace(full, "kind: tcp", "kind: carrier-pigeon"),
       "inter_node.kind is 'carrier-pigeon'; it must be one of shm, tcp, "
       "nvlink, infiniband, pcie"},
      {replace(full, "  op_overhead: 1e-6\n",
               "  op_overhead: 1e-6\n  peak_flops_fp8: 4e12\n"),
       "bad.yaml:13: unknown key 'device.peak_flops_fp8'"},
      {replace(full, "nodes: 2\n", "nodes: 2\ngpus: 8\n"),
       "bad.yaml:4: unknown key 'gpus'"},
      {replace(full, "  memory_bytes: 16e9\n", ""),
       "bad.yaml: missing device.memory_bytes"},
      {replace(full,
               "inter_node:\n  kind: tcp\n  latency: 5e-5\n"
               "  bandwidth: 1.25e9\n",
               ""),
       "bad.yaml: missing inter_node.kind"},
      {replace(full, "nodes: 2\n", "nodes: 2\nnodes: 3\n"),
       "bad.yaml:4: 'nodes' is given twice"},
      {replace(full,
               "intra_node: {kind: shm, latency: 2e-6, bandwidth: 5e9, "
               "shared_latency: 3e-5, all_reduce_bandwidth: 7e9}",
               "intra_node: 5e9"),
       "'intra_node' must be a mapping of its figures"},
      {replace(full, "peak_flops_f32: 1e12", "peak_flops_f32: [1e12]"),
       "'device.peak_flops_f32' must be a single value"},
      {"base: tpu\n", "bad.yaml:1: base is 'tpu'; it must name a built-in"},
      {"base: h100\ndevice: {memory_bytes: -80e9}\n",
       "device.memory_bytes is '-80e9'"},
      {"- 1\n- 2\n", "a cluster file is a mapping of fields"},
      {"name: [unclosed\n", "bad.yaml:"},
      {"", "bad.yaml: empty file"},
      // A name over two lines (the cluster fuzzer's first finding: the
      // writer's quoted name read back with a space for the line break).
      {"base: h100\nname: 'two\n\n  lines'\n",
       "name holds a control character (a line break, a tab); it must be one "
       "line of text"},
      {"base: h100\ndevice: {name: \"a\\tb\"}\n",
       "device.name holds a control character"},
      // What llvm's YAML parser must not see (the plan reader's guards).
      {std::string("base: h100\nname: a\0b\n", 21),
       "bad.yaml: a NUL byte at offset 18 (a cluster file is YAML or JSON "
       "text)"},
      {"base: h100\nname: {" + std::string(300, ',') + "}\n",
       "bad.yaml:2: more than 256 commas in a row (empty entries)"},
      {"base: h100\nname: " + std::string(20, '[') + std::string(20, ']') +
           "\n",
       "bad.yaml:2: values nested at least 21 deep, more than the 8 a "
       "cluster file may nest"},
      // An alias to no anchor: its node has no place in the file (the
      // cluster fuzzer's second finding: SIGSEGV looking up its line).
      {"#\nbase: *100\n0\n%\n", "bad.yaml"},
      // Figures so large or small that a cost overflows to infinity (the
      // cluster fuzzer's third finding, in CI: an all_reduce cost inf s).
      {"base: h100\nintra_node: {latency: 1e308}\n",
       "intra_node.latency is '1e308'; it must be a number in [0, 3600]"},
      {"base: h100\ninter_node: {bandwidth: 1e-308}\n",
       "inter_node.bandwidth is '1e-308'; it must be a number in [1, 1e+21]"},
      {"base: h100\ndevice: {peak_flops_bf16: 1e-300}\n",
       "device.peak_flops_bf16 is '1e-300'; it must be 0 or a number in "
       "[1, 1e+21]"},
      {"base: h100\nnodes: 9223372036854775807\n",
       "nodes is '9223372036854775807'; it must be a whole number in "
       "[1, 1048576]"},
      // Names are UTF-8 (a lone surrogate decodes to bytes that are not).
      {"base: h100\nname: \"\\ud800\"\n", "bad.yaml:2: name is not UTF-8 text"},
  };
  for (const auto &[text, want] : cases) {
    std::string got = errorOf(text);
    EXPECT_NE(got.find(want), std::string::npos)
        << "file:\n"
        << text << "\nwanted: " << want << "\ngot: " << got;
  }
  llvm::Expected<ClusterSpec> missing = loadClusterFile("/nonexistent/c.yaml");
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(llvm::toString(missing.takeError())
                .find("cannot read cluster file '/nonexistent/c.yaml'"),
            std::string::npos);
}

} // namespace
