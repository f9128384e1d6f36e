//===- Run.h - Running an artifact: what tessel-run does ---------*- C++ -*-===//
//
// tessel-run's work once its flags are parsed (tools/tessel-run parses them
// into RunOptions): open and check the artifact, start or join the world of
// ranks (Launch.h), bind inputs, run once or repeatedly, or train (Train.h)
// with checkpoints (Checkpoint.h), gradients (Grads.h) and ONNX export
// (OnnxExport.h), then write outputs, losses, traces and timelines. Every
// failure is one message on stderr and exit status 1; a usage error 2.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLING_RUN_H
#define TESSEL_TOOLING_RUN_H

#include "tessel/runtime/Executor.h"
#include "tessel/tooling/Train.h"

#include <string>
#include <utility>
#include <vector>

namespace tessel::tooling {

/// Every flag of tessel-run (its --help).
struct RunOptions {
  std::string artifact;
  std::vector<std::string> plugins; // --load-plugin
  std::vector<std::pair<std::string, std::string>> inputs;  // name, file
  std::vector<std::string> outputs; // [NAME=]FILE, resolved by resolveOutputs
  int threads = 1;
  int repeat = 1;
  bool repeatGiven = false;
  int rank = 0;
  std::string backend = "cpu";
  bool verify = true;
  bool verbose = false; // --verbose
  bool checkCollectives = false; // --check-collectives
  int ranks = 0;        // -n; 0 when not given
  bool rankGiven = false;
  int timeout = 30;     // seconds
  int maxRestarts = 0;  // --max-restarts (the launcher's)
  std::string trace;    // --trace FILE.json; empty: none
  std::string timeline; // --timeline FILE.svg; empty: none
  bool checkNumerics = false; // --check-numerics
  runtime::CollectiveOverlap overlap =
      runtime::CollectiveOverlap::Auto; // --overlap-collectives
  TrainOptions train;
};

/// "tessel-run: MSG (see tessel-run --help)" on stderr; returns 2.
int usageError(const std::string &msg);

/// Runs `o`: loads its plugins, then, in a launcher (-n N without a world
/// in the environment), starts the ranks as processes running `argv` again
/// (restarted up to --max-restarts times from the last checkpoint); else
/// runs this process's rank. Returns the exit status.
int runArtifactMain(const RunOptions &o, int argc, char **argv);

} // namespace tessel::tooling

#endif // TESSEL_TOOLING_RUN_H
