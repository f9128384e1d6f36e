//===- Registry.h - Named pipeline schedules --------------------*- C++ -*-===//
//
// Schedules are looked up by name. The built-ins (gpipe, 1f1b,
// interleaved-1f1b, zb-h1) are registered on first use; a new schedule is one
// generator function registered under a new name:
//
//   static llvm::Expected<Schedule> generateMine(const ScheduleOptions &o);
//   static ScheduleRegistration mine("mine", "what it does", generateMine);
//
// build() runs the generator and then finalizeSchedule(): the result is
// verified, completed with sends and receives, and verified again, exactly
// as a schedule read from a file (loadSchedule()).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_SCHEDULE_REGISTRY_H
#define TESSEL_SCHEDULE_REGISTRY_H

#include "tessel/Schedule/Generators.h"

#include "llvm/ADT/StringRef.h"

#include <functional>
#include <string>
#include <vector>

namespace tessel::pipeline {

using ScheduleGenerator =
    std::function<llvm::Expected<Schedule>(const ScheduleOptions &)>;

class ScheduleRegistry {
public:
  struct Entry {
    std::string name;
    std::string description;
    ScheduleGenerator generator;
  };

  /// An empty registry; see getGlobal() for the one with the built-ins.
  ScheduleRegistry() = default;

  /// The process-wide registry, holding the built-ins.
  static ScheduleRegistry &getGlobal();

  /// Adds the four built-in schedules.
  void addBuiltins();

  /// Registers `generator` as `name`; fails if the name is taken or empty.
  llvm::Error add(llvm::StringRef name, llvm::StringRef description,
                  ScheduleGenerator generator);

  /// nullptr when unknown.
  const Entry *lookup(llvm::StringRef name) const;

  /// Registered names, sorted.
  std::vector<std::string> getNames() const;

  /// Generates, verifies and completes the schedule `name`. An unknown name
  /// fails with "unknown schedule 'x' (known: ...)".
  llvm::Expected<Schedule> build(llvm::StringRef name,
                                 const ScheduleOptions &opts) const;

private:
  std::vector<Entry> entries;
};

/// Registers a generator in the global registry at static-initialisation
/// time; a clash of names is a fatal error naming the schedule.
struct ScheduleRegistration {
  ScheduleRegistration(llvm::StringRef name, llvm::StringRef description,
                       ScheduleGenerator generator);
};

/// Reads a schedule file (see TextFormat.h) and finalizes it like a
/// generated one.
llvm::Expected<Schedule> loadSchedule(llvm::StringRef path);

} // namespace tessel::pipeline

#endif // TESSEL_SCHEDULE_REGISTRY_H
