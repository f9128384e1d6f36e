//===- KernelTable.h - Op kind -> kernel factory, per backend ---*- C++ -*-===//
//
// The registry each backend dispatches through (as IREE's and ONNX Runtime's
// kernel registries): a fixed array indexed by the kind's number, filled by
// explicit register functions, one per kernel file. Executors resolve every
// instruction's factory once, when they are created; a kind a backend lacks
// fails the load with a message naming the op and the backend.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_OPS_KERNELTABLE_H
#define TESSEL_OPS_KERNELTABLE_H

#include "tessel/runtime/OpKind.h"
#include "tessel/runtime/Status.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace tessel::runtime {

template <typename Factory> class KernelTable {
public:
  static constexpr size_t kMaxKinds = 256;

  explicit KernelTable(const char *backend) : backendName(backend) {}

  /// Registers `factory` as `kind`'s kernel. Each kind once: a second
  /// registration makes lookup() fail rather than silently win.
  void add(OpKind kind, Factory factory) {
    const size_t k = static_cast<size_t>(kind);
    if (k >= kMaxKinds)
      return;
    factories[k] = factory;
    if (registrations[k] < 2)
      ++registrations[k];
  }
  /// `kind`'s factory, or null when this backend has none.
  Factory find(OpKind kind) const {
    const size_t k = static_cast<size_t>(kind);
    return k < kMaxKinds ? factories[k] : nullptr;
  }
  /// `kind`'s factory; fails with "op 'k' has no kernel on the B backend".
  Status lookup(OpKind kind, Factory &out) const {
    const size_t k = static_cast<size_t>(kind);
    out = find(kind);
    if (!out)
      return Status::error(std::string("op '") + opKindName(kind) +
                           "' has no kernel on the " + backendName +
                           " backend");
    if (registrations[k] > 1)
      return Status::error(std::string("op '") + opKindName(kind) +
                           "' has more than one kernel on the " + backendName +
                           " backend");
    return Status::ok();
  }
  /// Unregisters `kind` and returns its factory (null if none): for tests of
  /// unsupported kinds, which add it back.
  Factory remove(OpKind kind) {
    Factory f = find(kind);
    if (f) {
      factories[static_cast<size_t>(kind)] = nullptr;
      registrations[static_cast<size_t>(kind)] = 0;
    }
    return f;
  }
  const char *backend() const { return backendName; }

private:
  const char *backendName;
  std::array<Factory, kMaxKinds> factories{};
  std::array<uint8_t, kMaxKinds> registrations{};
};

// Every kind indexes the table.
#define TESSEL_X(E, N, V)                                                      \
  static_assert((V) > 0 && (V) < 256,                                          \
                "op kind '" N "' is outside the kernel tables");
TESSEL_RUNTIME_OP_KINDS(TESSEL_X)
#undef TESSEL_X

} // namespace tessel::runtime

#endif // TESSEL_OPS_KERNELTABLE_H
