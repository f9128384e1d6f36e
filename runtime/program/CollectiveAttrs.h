//===- CollectiveAttrs.h - Validating collective instructions ---*- C++ -*-===//
#ifndef TESSEL_RUNTIME_COMM_COLLECTIVEATTRS_H
#define TESSEL_RUNTIME_COMM_COLLECTIVEATTRS_H

#include "tessel/runtime/Program.h"

namespace tessel::artifact {
class Instruction;
} // namespace tessel::artifact

namespace tessel::runtime {

/// Checks a collective or point-to-point instruction of program `p` (its
/// operand and result counts, attributes and shapes) and fills `op.coll`.
/// The message does not name the instruction; the caller prefixes it.
Status checkCollectiveInstruction(const artifact::Instruction &inst,
                                  const Program &p, Op &op);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_COMM_COLLECTIVEATTRS_H
