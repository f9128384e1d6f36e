//===- PipelineSchedule.cpp - Pipeline schedules from Python --------------===//
//
// tessel.schedule(): TesselSchedule's registry, simulator, report and SVG
// timeline, as tesselc --emit=schedule runs them (lib/Driver/
// Schedule.cpp); the checks of stages, microbatches and costs are the
// library's, with its messages.
//
//===----------------------------------------------------------------------===//
#include "Common.h"

#include "tessel/Schedule/Registry.h"
#include "tessel/Schedule/Report.h"
#include "tessel/Schedule/Simulator.h"
#include "tessel/Schedule/TextFormat.h"
#include "tessel/Schedule/Timeline.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdio>

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

namespace tessel::python {

using namespace tessel::pipeline;

namespace {

struct PySchedule {
  Schedule schedule;
  ScheduleCosts costs;
  SimulationResult sim;

  std::string report(bool actions) const {
    std::string text;
    llvm::raw_string_ostream os(text);
    printReport(os, schedule, costs, sim, actions);
    return os.str();
  }
  std::string svg() const {
    std::string text;
    llvm::raw_string_ostream os(text);
    writeSvgTimeline(os, schedule, sim);
    return os.str();
  }
  /// (kind, stage, microbatch) of rank `rank`'s actions, in order.
  std::vector<std::tuple<std::string, int, int>> actions(int rank) const {
    if (rank < 0 || rank >= schedule.getNumRanks())
      raise("ScheduleError", "rank " + std::to_string(rank) +
                                 " is not in [0, " +
                                 std::to_string(schedule.getNumRanks()) + ")");
    std::vector<std::tuple<std::string, int, int>> r;
    for (const Action &a : schedule.getActions(rank))
      r.emplace_back(getActionKindName(a.kind).str(), a.stage, a.microbatch);
    return r;
  }
  std::vector<double> rankBubbles() const {
    std::vector<double> r;
    for (const RankStatistics &s : sim.ranks)
      r.push_back(s.bubbleFraction);
    return r;
  }
};

PySchedule makeSchedule(const std::string &name, int stages,
                        int microbatches, int chunks, const std::string &costs,
                        double stepCost, double p2pLatency,
                        double p2pBandwidth, double messageBytes) {
  auto fail = [](const std::string &prefix, llvm::Error e) {
    raise("ScheduleError", prefix + llvm::toString(std::move(e)));
  };
  for (auto [flag, v] : {std::pair{"stages", stages},
                         std::pair{"microbatches", microbatches},
                         std::pair{"chunks", chunks}})
    if (v < 1)
      raise("ScheduleError", std::string(flag) + " must be at least 1, got " +
                                 std::to_string(v));
  llvm::Expected<ScheduleCosts> c = ScheduleCosts::parse(costs);
  if (!c)
    fail("costs: ", c.takeError());
  c->optimizerStep = stepCost;
  c->p2pLatency = p2pLatency;
  c->p2pBandwidth = p2pBandwidth;
  c->messageBytes = messageBytes;
  if (llvm::Error e = c->validate())
    fail("", std::move(e));
  ScheduleOptions opts;
  opts.ranks = stages;
  opts.microbatches = microbatches;
  opts.chunks = chunks;
  llvm::Expected<Schedule> s = ScheduleRegistry::getGlobal().build(name, opts);
  if (!s)
    fail("", s.takeError());
  llvm::Expected<SimulationResult> sim = simulate(*s, *c);
  if (!sim)
    fail("", sim.takeError());
  return PySchedule{std::move(*s), *c, std::move(*sim)};
}

} // namespace

void bindSchedule(nb::module_ &m) {
  nb::class_<PySchedule>(m, "Schedule",
                         "A verified, simulated pipeline schedule.")
      .def_prop_ro("name",
                   [](const PySchedule &s) { return s.schedule.getName(); })
      .def_prop_ro("stages",
                   [](const PySchedule &s) { return s.schedule.getNumRanks(); },
                   "Pipeline ranks.")
      .def_prop_ro("microbatches", [](const PySchedule &s) {
        return s.schedule.getNumMicrobatches();
      })
      .def_prop_ro("bubble_fraction",
                   [](const PySchedule &s) { return s.sim.meanBubbleFraction; },
                   "Idle time over step time, the mean over ranks (the "
                   "bubble_fraction tesselc --emit=schedule prints).")
      .def_prop_ro("rank_bubble_fractions", &PySchedule::rankBubbles)
      .def_prop_ro("step_time",
                   [](const PySchedule &s) { return s.sim.stepTime; })
      .def("actions", &PySchedule::actions, nb::arg("rank"),
           "Rank `rank`'s actions in order, as (kind, stage, microbatch).")
      .def("report", &PySchedule::report, nb::arg("actions") = true,
           "The text tesselc --emit=schedule prints.")
      .def("text", [](const PySchedule &s) { return formatSchedule(s.schedule); },
           "The schedule in its text form (tesselc --save-schedule).")
      .def("svg", &PySchedule::svg, "The simulated timeline as SVG.")
      .def("_repr_svg_", &PySchedule::svg)
      .def("__repr__", [](const PySchedule &s) {
        char buf[64];
        std::snprintf(buf, sizeof(buf), "%.4f", s.sim.meanBubbleFraction);
        return "<tessel.Schedule " + s.schedule.getName() + ": " +
               std::to_string(s.schedule.getNumRanks()) + " stages, " +
               std::to_string(s.schedule.getNumMicrobatches()) +
               " microbatches, bubble_fraction " + buf + ">";
      });
  m.def("schedule", &makeSchedule, nb::arg("name"), nb::arg("stages"),
        nb::arg("microbatches"), nb::arg("chunks") = 1,
        nb::arg("costs") = "1,1,1", nb::arg("step_cost") = 0.0,
        nb::arg("p2p_latency") = 0.0, nb::arg("p2p_bandwidth") = 0.0,
        nb::arg("message_bytes") = 0.0);
  m.def("schedule_names", [] {
    return ScheduleRegistry::getGlobal().getNames();
  });
}

} // namespace tessel::python
