//===- ProgramVerifier.h - An instruction's load-time checks ----*- C++ -*-===//
//
// Private to runtime/program: what Program::create (Program.cpp) asks of
// each instruction after reading its operands and results.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_PROGRAM_PROGRAMVERIFIER_H
#define TESSEL_RUNTIME_PROGRAM_PROGRAMVERIFIER_H

#include "tessel/runtime/Program.h"

#include <string>

namespace tessel::artifact {
class Instruction;
} // namespace tessel::artifact

namespace tessel::runtime::verifier {

/// Checks instruction `op` of `p` (operand and result counts, dtypes,
/// shapes, attributes) by its kind's check family, then the attribute types
/// the op table declares, and fills `op`'s parsed attributes. Messages
/// start with `where`.
Status checkInstruction(const artifact::Instruction &inst, Program &p, Op &op,
                        const std::string &where);

/// Results may alias an operand only exactly and only for the kinds that
/// run in place (or as a slice's view); they never overlap one another.
Status checkAliasing(const Program &p, const Op &op, const std::string &where);

} // namespace tessel::runtime::verifier

#endif // TESSEL_RUNTIME_PROGRAM_PROGRAMVERIFIER_H
