//===- Internal.h - lib/Driver's shared helpers -----------------*- C++ -*-===//
#ifndef TESSEL_LIB_DRIVER_INTERNAL_H
#define TESSEL_LIB_DRIVER_INTERNAL_H

#include "tessel/Cost/Cluster.h"
#include "tessel/Driver/Driver.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

namespace tessel::driver {

/// The name messages start with ("tesselc: error: ...").
constexpr llvm::StringLiteral kTool = "tesselc";

/// The DriverError tesselc prints as "tesselc: error: <message>".
llvm::Error fail(const llvm::Twine &message);

/// --emit=schedule (Schedule.cpp): builds or loads the schedule, simulates
/// it, writes -o (unless "-"), the timelines and the schedule file asked
/// for. Returns the report when -o is "" or "-" (else ""), or the list of
/// schedules with --list-schedules.
llvm::Expected<std::string> emitSchedule(const CompileOptions &options);

/// --cluster: a built-in cluster's name, or a cluster file. A built-in GPU
/// cluster (DGX nodes of 8) has as many nodes as `ranks` needs: --devices
/// 64 on h100 is eight DGX H100s, not 64 ranks sharing one node's GPUs. A
/// file's node count, and the cpu cluster's (ranks share its cores), stay.
llvm::Expected<cost::ClusterSpec> loadCluster(llvm::StringRef name,
                                              int64_t ranks = 0);

/// --plan=auto's choice (AutoPlan.cpp): the options to compile, and the
/// table --explain prints.
struct AutoPlanResult {
  CompileOptions options;
  std::string chosen;
  std::string explanation;
};
llvm::Expected<AutoPlanResult> chooseAutoPlan(const CompileOptions &options);

} // namespace tessel::driver

#endif // TESSEL_LIB_DRIVER_INTERNAL_H
