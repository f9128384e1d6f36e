//===- ExtensionSchedules.h - plugins' schedules ----------------*- C++ -*-===//
//
// Routes schedules that plugins register (include/tessel/Extension/) into
// ScheduleRegistry::getGlobal(), where the built-ins are.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_SCHEDULE_EXTENSIONSCHEDULES_H
#define TESSEL_SCHEDULE_EXTENSIONSCHEDULES_H

#include "tessel/Extension/Schedule.h"
#include "tessel/Schedule/Registry.h"

namespace tessel::pipeline {

/// The registry generator of `def` (registered by `plugin`): its action
/// lists placed on the looped stage placement; a result the verifier refuses
/// fails naming the schedule and the plugin.
ScheduleGenerator makeExtensionGenerator(ext::ScheduleDef def,
                                         std::string plugin);

/// From now on, a schedule a plugin registers goes into the global registry.
void installExtensionSchedules();

} // namespace tessel::pipeline

#endif // TESSEL_SCHEDULE_EXTENSIONSCHEDULES_H
