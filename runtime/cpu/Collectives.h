//===- Collectives.h - Collective instructions on the CPU -------*- C++ -*-===//
#ifndef TESSEL_RUNTIME_CPU_COLLECTIVES_H
#define TESSEL_RUNTIME_CPU_COLLECTIVES_H

#include "tessel/runtime/Communicator.h"
#include "tessel/runtime/Program.h"

#include <functional>
#include <memory>

namespace tessel::runtime::cpu {

/// The CPU executor's collectives: resolves each instruction's group to a
/// cached sub-communicator when the executor is created, then runs them.
class Collectives {
public:
  /// `comm` is the world (nullptr: a local communicator of one rank). Checks
  /// that the world matches the program and creates every subgroup the
  /// program uses, in canonical order.
  Status init(const Program &program, Communicator *comm);
  /// The step of collective or point-to-point instruction `op`.
  std::function<Status()> step(const Program &program, const Op &op,
                               const std::vector<void *> &ptrs);

private:
  std::unique_ptr<Communicator> local;
  Communicator *world = nullptr;
};

} // namespace tessel::runtime::cpu

#endif // TESSEL_RUNTIME_CPU_COLLECTIVES_H
