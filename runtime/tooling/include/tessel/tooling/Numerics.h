//===- Numerics.h - tessel-run stops a training that goes non-finite -*- C++ -*-===//
//
// A non-finite loss or state stops the training with an error naming the
// step, on every rank (docs/training.md, "Non-finite values"):
//   - the loss of every step is checked (a NaN gradient shows in the next
//     step's loss, its update having made the parameters non-finite);
//   - every state (parameters, optimizer state) is checked before a
//     checkpoint or --export-onnx writes it, so no checkpoint is ever
//     written with a non-finite value;
//   - with --check-numerics, every instruction's results
//     (Executor::setCheckNumerics): the first instruction that produced a
//     NaN or an infinity, by index, op kind, ONNX node and rank.
// With several ranks the ranks agree after each step (an all_gather of one
// flag each), so all stop at the same step and none waits at a collective.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLING_NUMERICS_H
#define TESSEL_TOOLING_NUMERICS_H

#include "tessel/runtime/Communicator.h"
#include "tessel/runtime/Runtime.h"

#include <string>

namespace tessel::tooling {

struct NumericsGuard {
  runtime::Communicator *comm = nullptr; // null: one rank
  int rank = 0;
  int worldSize = 1;
  /// --check-numerics: the executor checks every instruction.
  bool instructions = false;

  /// After step `step` (counted from 1) of `stop`: an error on every rank
  /// when a rank's `loss` (null: this rank has none) or, with
  /// `instructions`, one of its instructions was not finite. `stop` == 0:
  /// a run that is no training step ("run 3").
  runtime::Status afterStep(const runtime::Executor &exec, int64_t step,
                            int64_t stop, const float *loss) const;
  /// This rank's own finding in the last run, alone (no agreement with
  /// the other ranks: for a run that failed); empty: none.
  std::string finding(const runtime::Executor &exec, int64_t step,
                      int64_t stop) const;
  /// Before the states after step `step` are written (`what`: "the
  /// checkpoint of step 4", "--export-onnx x.onnx"): an error on every rank
  /// when a rank holds a non-finite state.
  runtime::Status checkStates(runtime::Executor &exec, int64_t step,
                              const std::string &what) const;

private:
  /// Every rank's `mine` (empty: fine): ok when all are, else this rank's
  /// message, or one naming the ranks that failed.
  runtime::Status agree(const std::string &mine, const std::string &prefix,
                        const std::string &others) const;
};

} // namespace tessel::tooling

#endif // TESSEL_TOOLING_NUMERICS_H
