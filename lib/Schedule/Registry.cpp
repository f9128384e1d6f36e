//===- Registry.cpp - Named pipeline schedules ----------------------------===//

#include "tessel/Schedule/Registry.h"
#include "tessel/Schedule/Communication.h"
#include "tessel/Schedule/TextFormat.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"

#include <algorithm>

using namespace llvm;

namespace tessel::pipeline {

ScheduleRegistry &ScheduleRegistry::getGlobal() {
  static ScheduleRegistry *registry = [] {
    auto *r = new ScheduleRegistry();
    r->addBuiltins();
    return r;
  }();
  return *registry;
}

void ScheduleRegistry::addBuiltins() {
  const Entry builtins[] = {
      {"1f1b",
       "one forward, one backward (PipeDream-Flush); at most p in flight",
       generateOneFOneB},
      {"gpipe", "all forwards, then all backwards; m in flight", generateGPipe},
      {"interleaved-1f1b",
       "Megatron's interleaved 1F1B over --chunks model chunks per rank; m "
       "must be a multiple of p",
       generateInterleavedOneFOneB},
      {"zb-h1",
       "zero-bubble H1: backward split into B and W, W filling the drain",
       generateZeroBubbleH1},
  };
  for (const Entry &e : builtins)
    if (!lookup(e.name))
      entries.push_back(e);
}

Error ScheduleRegistry::add(StringRef name, StringRef description,
                            ScheduleGenerator generator) {
  if (name.empty())
    return makeScheduleError("a schedule needs a name");
  if (!generator)
    return makeScheduleError("schedule '" + name + "' has no generator");
  if (lookup(name))
    return makeScheduleError("schedule '" + name + "' is already registered");
  entries.push_back({name.str(), description.str(), std::move(generator)});
  return Error::success();
}

const ScheduleRegistry::Entry *ScheduleRegistry::lookup(StringRef name) const {
  for (const Entry &e : entries)
    if (e.name == name)
      return &e;
  return nullptr;
}

std::vector<std::string> ScheduleRegistry::getNames() const {
  std::vector<std::string> names;
  for (const Entry &e : entries)
    names.push_back(e.name);
  llvm::sort(names);
  return names;
}

Expected<Schedule> ScheduleRegistry::build(StringRef name,
                                           const ScheduleOptions &opts) const {
  const Entry *e = lookup(name);
  if (!e)
    return makeScheduleError("unknown schedule '" + name +
                             "' (known: " + join(getNames(), ", ") + ")");
  Expected<Schedule> s = e->generator(opts);
  if (!s)
    return s.takeError();
  s->setName(e->name);
  return finalizeSchedule(std::move(*s));
}

ScheduleRegistration::ScheduleRegistration(StringRef name,
                                           StringRef description,
                                           ScheduleGenerator generator) {
  if (Error e = ScheduleRegistry::getGlobal().add(name, description,
                                                  std::move(generator)))
    report_fatal_error(Twine(toString(std::move(e))));
}

Expected<Schedule> loadSchedule(StringRef path) {
  Expected<Schedule> s = readScheduleFile(path);
  if (!s)
    return s.takeError();
  return finalizeSchedule(std::move(*s));
}

} // namespace tessel::pipeline
