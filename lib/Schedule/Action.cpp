//===- Action.cpp - Text form of one pipeline action ----------------------===//

#include "tessel/Schedule/Action.h"
#include "tessel/Schedule/Schedule.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace tessel::pipeline {

/// Each kind's name in the text form, then the aliases a parser accepts too.
static constexpr std::pair<const char *, ActionKind> kKindNames[] = {
    {"F", ActionKind::Forward},
    {"B", ActionKind::BackwardInput},
    {"W", ActionKind::BackwardWeight},
    {"BW", ActionKind::FullBackward},
    {"SEND_F", ActionKind::SendForward},
    {"RECV_F", ActionKind::RecvForward},
    {"SEND_B", ActionKind::SendBackward},
    {"RECV_B", ActionKind::RecvBackward},
    {"STEP", ActionKind::OptimizerStep},
    {"FULL_BACKWARD", ActionKind::FullBackward},
};

StringRef getActionKindName(ActionKind k) {
  for (const auto &[n, kind] : kKindNames)
    if (kind == k)
      return n;
  llvm_unreachable("unknown action kind");
}

void printAction(raw_ostream &os, const Action &a) {
  os << a.stage << getActionKindName(a.kind);
  if (a.kind != ActionKind::OptimizerStep)
    os << a.microbatch;
}

std::string formatAction(const Action &a) {
  std::string s;
  raw_string_ostream os(s);
  printAction(os, a);
  return s;
}

static std::optional<ActionKind> parseKind(StringRef name) {
  for (const auto &[n, k] : kKindNames)
    if (name == n)
      return k;
  return std::nullopt;
}

static bool parseIndex(StringRef digits, int32_t &out) {
  // Digits only; getAsInteger also rejects values that overflow.
  unsigned long long v;
  if (digits.empty() || digits.getAsInteger(10, v) || v > INT32_MAX)
    return false;
  out = static_cast<int32_t>(v);
  return true;
}

Expected<Action> parseAction(StringRef token) {
  StringRef rest = token;
  StringRef stageDigits = rest.take_while(isDigit);
  rest = rest.drop_front(stageDigits.size());
  StringRef kindName =
      rest.take_while([](char c) { return isUpper(c) || c == '_'; });
  rest = rest.drop_front(kindName.size());
  StringRef mbDigits = rest.take_while(isDigit);
  rest = rest.drop_front(mbDigits.size());

  Action a;
  if (stageDigits.empty())
    return makeScheduleError("action '" + token +
                             "' does not start with a stage index");
  if (!parseIndex(stageDigits, a.stage))
    return makeScheduleError("action '" + token + "' has a stage index '" +
                             stageDigits + "' that is too large");
  std::optional<ActionKind> kind = parseKind(kindName);
  if (!kind)
    return makeScheduleError(
        "action '" + token + "' has unknown kind '" + kindName +
        "' (expected F, B, W, BW, SEND_F, RECV_F, SEND_B, RECV_B or STEP)");
  a.kind = *kind;
  if (!rest.empty())
    return makeScheduleError("action '" + token + "' has trailing '" + rest +
                             "'");
  if (a.kind == ActionKind::OptimizerStep) {
    if (!mbDigits.empty())
      return makeScheduleError("action '" + token +
                               "' is an optimizer step and takes no "
                               "microbatch");
    a.microbatch = -1;
    return a;
  }
  if (mbDigits.empty())
    return makeScheduleError("action '" + token +
                             "' has no microbatch index after '" + kindName +
                             "'");
  if (!parseIndex(mbDigits, a.microbatch))
    return makeScheduleError("action '" + token + "' has a microbatch index '" +
                             mbDigits + "' that is too large");
  return a;
}

} // namespace tessel::pipeline
