//===- Trace.h - Chrome-trace timelines of tessel-run ------------*- C++ -*-===//
//
// `tessel-run --trace FILE.json` writes the last run's instructions as a
// Chrome trace (chrome://tracing, ui.perfetto.dev): one track per rank
// (pid = rank), one complete event per instruction named by its ONNX node
// and categorised by its op kind, collectives included, so time spent
// waiting for a peer shows as a long collective; in a training step each
// event's args.phase says forward, backward or optimizer. A pipelined
// program's events name their schedule action (args.action), and a second
// track per rank (tid 1, "actions") holds one span per action: F/B/W/STEP
// per microbatch, SEND, RECV (the time blocked waiting). With -n N each
// rank writes
// FILE.rankR and the launcher merges them into FILE; ranks started by
// mpirun/srun/torchrun leave their FILE.rankR files.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUN_TRACE_H
#define TESSEL_RUN_TRACE_H

#include "tessel/runtime/Executor.h"
#include "tessel/runtime/Program.h"

#include <functional>
#include <istream>
#include <string>

namespace tessel::tooling {

/// Writes `events` of `program` run by `rank` to `path` as a Chrome trace.
runtime::Status writeTrace(const std::string &path, int rank,
                           const runtime::Program &program,
                           const std::vector<runtime::TraceEvent> &events);

/// The phase of each instruction of a training step (a program with an
/// output `loss` and states): "forward" up to the instruction that computes
/// the loss, then "optimizer" (the update, and the copies into the states)
/// and "backward"; empty for other programs.
std::vector<const char *> stepPhases(const runtime::Program &program);

/// The file rank `rank` of a multi-rank run writes: PATH.rankR.
std::string rankTracePath(const std::string &path, int rank);

/// Merges the `ranks` files rankTracePath(path, r) into `path` and removes
/// them.
runtime::Status mergeTraces(const std::string &path, int ranks);

/// `text` written to `path` (replacing it); fails with "cannot write the
/// <what> <path>".
runtime::Status writeTextFile(const std::string &path, const std::string &text,
                              const std::string &what);

/// read(r, part, in) for the file `part` = rankTracePath(path, r) of each
/// rank, in order; fails with "cannot read the <what> of rank r (part)"
/// where one cannot be opened, or with read's own failure.
runtime::Status readRankFiles(
    const std::string &path, int ranks, const std::string &what,
    const std::function<runtime::Status(int, const std::string &,
                                        std::istream &)> &read);

/// The merge of the rank files into `path`: `text` written there (as
/// writeTextFile), then the rank files removed.
runtime::Status replaceRankFiles(const std::string &path, int ranks,
                                 const std::string &text,
                                 const std::string &what);

} // namespace tessel::tooling

#endif // TESSEL_RUN_TRACE_H
