//===- Executor.h - Running a program on a backend --------------*- C++ -*-===//
#ifndef TESSEL_RUNTIME_EXECUTOR_H
#define TESSEL_RUNTIME_EXECUTOR_H

#include "tessel/runtime/Program.h"
#include "tessel/runtime/Status.h"
#include "tessel/runtime/Tensor.h"

#include <memory>
#include <string>
#include <vector>

namespace tessel::runtime {

class Communicator;

struct ExecutorOptions {
  /// Threads for kernels (BLAS and the runtime's own); >= 1.
  int threads = 1;
  /// The world this rank's collectives run on (not owned; outlives the
  /// executor). nullptr: a single-rank run (a local communicator).
  Communicator *comm = nullptr;
};

/// One instruction's execution in a run, for timelines: `op` indexes
/// Program::ops; times in microseconds of the steady clock (CLOCK_MONOTONIC,
/// shared by every process of a host, so ranks' events line up).
struct TraceEvent {
  int op = 0;
  double beginUs = 0;
  double durUs = 0;
};

/// Where the last run's time went, for pipelines' bubbles: the run's wall
/// time and the part of it spent blocked on peers (in recv instructions,
/// which wait for a receive posted earlier, and in `wait`s of asynchronous
/// all_reduces). Backends that do not measure leave zeros.
struct RunStats {
  double wallUs = 0;
  double idleUs = 0;
};

/// Executes one rank's Program: owns its arena and its state buffers (which
/// persist from one run to the next); bind inputs, run, fetch outputs.
/// Backends (cpu, cuda) implement it.
class Executor {
public:
  explicit Executor(std::shared_ptr<const Program> program);
  virtual ~Executor();

  virtual const char *backend() const = 0;
  const Program &program() const { return *prog; }

  /// Copies `t` into input `name`; checks its dtype and shape.
  Status setInput(const std::string &name, const Tensor &t);
  /// setInput from the caller's memory: row-major `dtype` `shape` at `data`,
  /// read once (no Tensor in between; the Python module binds NumPy arrays
  /// so).
  Status setInputFrom(const std::string &name, DType dtype, const Shape &shape,
                      const void *data);
  /// Executes every instruction once.
  virtual Status run() = 0;
  /// Copies output `name` into a fresh tensor.
  Status getOutput(const std::string &name, Tensor &out);
  /// Copies the current value of state `name` (Program::states) into a
  /// fresh tensor: what the runs so far left there.
  Status getState(const std::string &name, Tensor &out);
  /// Overwrites state `name` (e.g. from a checkpoint); checks its dtype and
  /// shape.
  Status setState(const std::string &name, const Tensor &t);

  /// With tracing on, run() records every instruction it executes (the
  /// last run's are kept). Backends that cannot record leave it empty.
  void setTracing(bool on) { tracing = on; }
  const std::vector<TraceEvent> &lastTrace() const { return traceEvents; }
  const RunStats &lastRunStats() const { return runStats; }

protected:
  RunStats runStats;
  bool tracing = false;
  std::vector<TraceEvent> traceEvents;

  /// Backend copies of host bytes to and from buffer `id`.
  virtual Status writeBuffer(int id, const void *src) = 0;
  virtual Status readBuffer(int id, void *dst) = 0;

  std::shared_ptr<const Program> prog;
};

/// Backends built into this library ("cpu", and "cuda" when built with CUDA).
std::vector<std::string> availableBackends();

/// Creates an executor of `backend` for `program`.
Status createExecutor(const std::string &backend,
                      std::shared_ptr<const Program> program,
                      const ExecutorOptions &options,
                      std::unique_ptr<Executor> &out);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_EXECUTOR_H
