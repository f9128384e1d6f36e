//===- ExtensionSchedules.cpp - plugins' schedules into the registry ------===//
//
// A plugin's schedule (include/tessel/Extension/Schedule.h) becomes one more
// generator of the ScheduleRegistry, beside the built-ins: the same
// finalisation (sends and receives added, verified) and the same simulator.
// A generated schedule that fails the verifier fails naming the plugin.
//
//===----------------------------------------------------------------------===//

#include "tessel/Schedule/ExtensionSchedules.h"
#include "tessel/Schedule/Communication.h"
#include "tessel/Schedule/Registry.h"

#include "tessel/ExtensionHost/Host.h"

using namespace llvm;

namespace tessel::pipeline {
namespace {

Action toAction(const ext::ScheduleStep &s) {
  switch (s.kind) {
  case ext::ScheduleStep::Kind::F:
    return Action::forward(s.stage, s.microbatch);
  case ext::ScheduleStep::Kind::B:
    return Action::backwardInput(s.stage, s.microbatch);
  case ext::ScheduleStep::Kind::W:
    return Action::backwardWeight(s.stage, s.microbatch);
  case ext::ScheduleStep::Kind::BW:
    return Action::fullBackward(s.stage, s.microbatch);
  case ext::ScheduleStep::Kind::Step:
    break;
  }
  return Action::optimizerStep(s.stage);
}

} // namespace

ScheduleGenerator makeExtensionGenerator(ext::ScheduleDef def,
                                         std::string plugin) {
  return [def = std::move(def),
          plugin = std::move(plugin)](const ScheduleOptions &o)
             -> Expected<Schedule> {
    const std::string who =
        "schedule '" + def.name + "' of plugin '" + plugin + "'";
    std::vector<std::vector<ext::ScheduleStep>> perRank(
        std::max<int32_t>(o.ranks, 0));
    if (std::string err = def.generate(o, perRank); !err.empty())
      return makeScheduleError(who + ": " + err);
    if (perRank.size() != size_t(std::max<int32_t>(o.ranks, 0)))
      return makeScheduleError(who + " gave " + Twine(perRank.size()) +
                               " action lists for " + Twine(o.ranks) +
                               " ranks");
    Expected<Schedule> s =
        Schedule::createLooped(def.name, o.ranks, o.chunks, o.microbatches);
    if (!s)
      return s.takeError();
    for (auto [r, steps] : llvm::enumerate(perRank))
      for (const ext::ScheduleStep &step : steps) {
        if (step.stage < 0 || step.stage >= s->getNumStages())
          return makeScheduleError(who + ": rank " + Twine(r) +
                                   " lists stage " + Twine(step.stage) +
                                   " of " + Twine(s->getNumStages()));
        s->append(int32_t(r), toAction(step));
      }
    // The optimizer step of every stage whose rank does not list it.
    for (int32_t r = 0; r < s->getNumRanks(); ++r)
      for (int32_t st : s->getStagesOf(r))
        if (!llvm::is_contained(s->getActions(r), Action::optimizerStep(st)))
          s->append(r, Action::optimizerStep(st));
    // Checked here, as the registry will check it, so that a schedule the
    // verifier refuses names the plugin it came from.
    if (Expected<Schedule> checked = finalizeSchedule(*s); !checked)
      return makeScheduleError(who + " fails the verifier: " +
                               toString(checked.takeError()));
    return s;
  };
}

void installExtensionSchedules() {
  ext::host::setScheduleSink([](const ext::ScheduleDef &def,
                                const std::string &plugin) -> std::string {
    if (Error e = ScheduleRegistry::getGlobal().add(
            def.name, def.description, makeExtensionGenerator(def, plugin)))
      return toString(std::move(e));
    return "";
  });
}

} // namespace tessel::pipeline
