//===- ClusterFile.h - cluster descriptions in YAML -------------*- C++ -*-===//
//
// A cluster file describes a ClusterSpec in YAML (examples/clusters/*.yaml,
// docs/auto-plan.md):
//
//   name: h100x8
//   base: h100              # optional: start from a built-in cluster
//   devices_per_node: 8
//   nodes: 1
//   device:
//     name: H100-SXM5-80GB
//     peak_flops_f32: 67e12
//     peak_flops_bf16: 989e12
//     matmul_efficiency: 0.75
//     convolution_efficiency: 0.55
//     memory_bytes: 85899345920
//     memory_bandwidth: 3.015e12
//     op_overhead: 5e-6
//   intra_node: {kind: nvlink, latency: 5e-6, bandwidth: 450e9}
//   inter_node: {kind: infiniband, latency: 1e-5, bandwidth: 50e9}
//
// The keys are the field names ClusterSpec::validate() reports. Without
// `base`, every figure is required; with it, any subset overrides the
// built-in's. Unknown keys, duplicate keys, missing figures, numbers that do
// not parse and figures validate() refuses (negative, zero, NaN) are errors
// that name the file, the line and the field.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COST_CLUSTERFILE_H
#define TESSEL_COST_CLUSTERFILE_H

#include "tessel/Cost/Cluster.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace tessel::cost {

/// Parses a cluster file's text; `fileName` names it in messages.
llvm::Expected<ClusterSpec> parseClusterFile(llvm::StringRef text,
                                             llvm::StringRef fileName);

/// Reads and parses the cluster file at `path`.
llvm::Expected<ClusterSpec> loadClusterFile(llvm::StringRef path);

/// The cluster as a complete cluster file (no `base`): parseClusterFile of
/// the result gives back the same figures (numbers are written with 17
/// significant digits).
std::string printClusterFile(const ClusterSpec &cluster);

/// Writes printClusterFile(cluster) to `path`.
llvm::Error writeClusterFile(const ClusterSpec &cluster, llvm::StringRef path);

} // namespace tessel::cost

#endif // TESSEL_COST_CLUSTERFILE_H
