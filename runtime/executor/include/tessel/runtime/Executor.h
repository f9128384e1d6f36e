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

/// Whether a rank's asynchronous collectives (those a `wait` completes:
/// gradient buckets, FSDP's prefetched gathers, ZeRO's reduce_scatters) run
/// on a communication thread beside its compute, or in place.
enum class CollectiveOverlap { Auto, On, Off };

struct ExecutorOptions {
  /// Threads for kernels (BLAS and the runtime's own); >= 1.
  int threads = 1;
  /// The world this rank's collectives run on (not owned; outlives the
  /// executor). nullptr: a single-rank run (a local communicator).
  Communicator *comm = nullptr;
  /// CPU backend (CUDA's run on NCCL's stream, always beside the compute).
  CollectiveOverlap overlap = CollectiveOverlap::Auto;
};

/// Whether the CPU backend overlaps asynchronous collectives: On and Off
/// decide; Auto overlaps unless the communicator moves the bytes on the
/// rank's own cores (`backend` "shm": the calling thread copies them) and
/// the rank has no core beyond its `threads` compute threads (`cores`: the
/// cores it may run on). There a communication thread takes the core the
/// compute needs, and handing each collective over and waking the rank
/// back costs more than the overlap hides (a ZeRO-2 step of the tiny Llama,
/// 2 ranks on 2 cores: 0.97 ms overlapped, 0.60 in place). Over Gloo the
/// kernel and the NIC move the bytes, so it overlaps.
bool overlapsCollectives(CollectiveOverlap overlap, const char *backend,
                         int cores, int threads);
/// The cores this process may run on (its affinity mask); 1 if unknown.
int getAllowedCores();

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

/// The first non-finite value a run's instructions produced, found with
/// Executor::setCheckNumerics (tessel-run --check-numerics).
struct NumericsFinding {
  bool found = false;
  int op = -1;          // the instruction (index into Program::ops)
  int result = 0;       // which of its results
  int64_t element = 0;  // the element, flat, in the result's stored bytes
  bool plainLayout = true; // false: the buffer is in a blocked layout
  float value = 0;      // NaN or an infinity
  /// An operand that already held a NaN and that no instruction of the
  /// run wrote (a weight, constant, state or input): the value came in
  /// there. -1: the instruction made it from finite operands (or, for an
  /// infinity, from operands without NaN or infinities).
  int sourceOperand = -1;
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

  /// With numerics checks on, run() scans every f32 result of every
  /// instruction once it is complete (an asynchronous collective's at its
  /// wait) and records the first that holds a NaN or an infinity the
  /// instruction produced: a NaN where no operand held one, an infinity
  /// where every operand was finite (an infinity carried from an operand,
  /// like an additive mask's -inf, is no finding), or any non-finite value
  /// carried from a weight, constant, state or input holding a NaN. A run
  /// without peers stops at the finding (its remaining instructions do not
  /// run); with peers it runs to its end, so that every rank's collectives
  /// match, and reports the first. Returns false where the backend cannot
  /// check.
  virtual bool setCheckNumerics(bool on) {
    (void)on;
    return false;
  }
  /// The last run's finding (found == false: none, or checks are off).
  const NumericsFinding &lastNumerics() const { return numerics; }

protected:
  RunStats runStats;
  NumericsFinding numerics;
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
