//===- Action.h - One step of a per-rank pipeline program -------*- C++ -*-===//
//
// An action is what one pipeline rank does next: run a forward or a backward
// piece of one model stage on one microbatch, move an activation or a gradient
// to the neighbouring stage, or step the optimizer of a stage.
//
// The text form follows PyTorch's torch.distributed.pipelining: stage index,
// then the action, then the microbatch: `1F0`, `2SEND_F3`, `0STEP`.
// Unlike PyTorch, `B` is the input-gradient half of a split backward (as in the
// zero-bubble paper) and the fused backward is spelled `BW`.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_SCHEDULE_ACTION_H
#define TESSEL_SCHEDULE_ACTION_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace tessel::pipeline {

/// What an action does. The order is part of the text form's stability only
/// through the names returned by getActionKindName().
enum class ActionKind : uint8_t {
  /// Forward of one stage on one microbatch (`F`).
  Forward,
  /// Input-gradient backward of a split backward (`B`): the gradient the
  /// previous stage waits for.
  BackwardInput,
  /// Weight-gradient backward of a split backward (`W`).
  BackwardWeight,
  /// Fused backward, input and weight gradients at once (`BW`).
  FullBackward,
  /// Send this stage's output activation to the next stage (`SEND_F`).
  SendForward,
  /// Receive the previous stage's output activation (`RECV_F`).
  RecvForward,
  /// Send this stage's input gradient to the previous stage (`SEND_B`).
  SendBackward,
  /// Receive the next stage's input gradient (`RECV_B`).
  RecvBackward,
  /// Apply the optimizer to this stage's parameters (`STEP`); no microbatch.
  OptimizerStep,
};

inline constexpr unsigned kNumActionKinds = 9;

/// One entry of a rank's action list. Plain data: 12 bytes.
struct Action {
  ActionKind kind = ActionKind::Forward;
  /// Global stage index in [0, numStages).
  int32_t stage = 0;
  /// Microbatch index in [0, numMicrobatches); -1 for OptimizerStep.
  int32_t microbatch = 0;

  static Action forward(int32_t s, int32_t mb) {
    return {ActionKind::Forward, s, mb};
  }
  static Action backwardInput(int32_t s, int32_t mb) {
    return {ActionKind::BackwardInput, s, mb};
  }
  static Action backwardWeight(int32_t s, int32_t mb) {
    return {ActionKind::BackwardWeight, s, mb};
  }
  static Action fullBackward(int32_t s, int32_t mb) {
    return {ActionKind::FullBackward, s, mb};
  }
  static Action optimizerStep(int32_t s) {
    return {ActionKind::OptimizerStep, s, -1};
  }

  bool operator==(const Action &o) const {
    return kind == o.kind && stage == o.stage && microbatch == o.microbatch;
  }
  bool operator!=(const Action &o) const { return !(*this == o); }
};

/// True for F, B, W, BW and STEP: the actions that occupy the compute stream.
inline bool isCompute(ActionKind k) {
  return k == ActionKind::Forward || k == ActionKind::BackwardInput ||
         k == ActionKind::BackwardWeight || k == ActionKind::FullBackward ||
         k == ActionKind::OptimizerStep;
}
/// True for the four point-to-point actions.
inline bool isCommunication(ActionKind k) { return !isCompute(k); }
inline bool isSend(ActionKind k) {
  return k == ActionKind::SendForward || k == ActionKind::SendBackward;
}
inline bool isRecv(ActionKind k) {
  return k == ActionKind::RecvForward || k == ActionKind::RecvBackward;
}
/// True for the actions that produce the gradient sent to the previous stage.
inline bool producesInputGradient(ActionKind k) {
  return k == ActionKind::BackwardInput || k == ActionKind::FullBackward;
}

/// The name used in the text form: "F", "B", "W", "BW", "SEND_F", ...
llvm::StringRef getActionKindName(ActionKind k);

/// The text form of one action: `1F0`, `2SEND_F3`, `0STEP`.
std::string formatAction(const Action &a);
void printAction(llvm::raw_ostream &os, const Action &a);

/// Parses one action token; `FULL_BACKWARD` is accepted for `BW`. The error
/// names the token and what is wrong with it.
llvm::Expected<Action> parseAction(llvm::StringRef token);

} // namespace tessel::pipeline

#endif // TESSEL_SCHEDULE_ACTION_H
