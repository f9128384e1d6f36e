//===- Schedule.cpp - --emit=schedule -------------------------------------===//
//
// A thin driver over TesselSchedule: read the options, build or load the
// schedule, simulate it, print. All checking of schedules is the library's.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "Writable.h"

#include "tessel/Schedule/Registry.h"
#include "tessel/Schedule/Report.h"
#include "tessel/Schedule/Simulator.h"
#include "tessel/Schedule/TextFormat.h"
#include "tessel/Schedule/Timeline.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace tessel::pipeline;

namespace tessel::driver {

namespace {

Error fail(Error e) { return driver::fail(toString(std::move(e))); }

Expected<Schedule> getSchedule(const CompileOptions &o) {
  if (!o.scheduleFile.empty()) {
    Expected<Schedule> s = loadSchedule(o.scheduleFile);
    if (!s)
      return s.takeError();
    int stages = 0;
    if (o.stages && (StringRef(*o.stages).getAsInteger(10, stages) ||
                     stages != s->getNumRanks()))
      return makeScheduleError(
          "--stages " + Twine(*o.stages) + " does not match the " +
          Twine(s->getNumRanks()) + " ranks of schedule file '" +
          o.scheduleFile + "'");
    if (o.microbatches && *o.microbatches != s->getNumMicrobatches())
      return makeScheduleError(
          "--microbatches " + Twine(*o.microbatches) + " does not match the " +
          Twine(s->getNumMicrobatches()) + " microbatches of schedule file '" +
          o.scheduleFile + "'");
    return s;
  }
  if (!o.stages)
    return makeScheduleError("--stages is required with --schedule");
  int stages = 0;
  if (StringRef(*o.stages).getAsInteger(10, stages))
    return makeScheduleError("--stages must be a number with --emit=schedule, "
                             "got '" + Twine(*o.stages) + "'");
  if (!o.microbatches)
    return makeScheduleError("--microbatches is required with --schedule");
  if (stages < 1)
    return makeScheduleError("--stages must be at least 1, got " +
                             Twine(stages));
  for (auto [flag, count] : {std::pair("microbatches", *o.microbatches),
                             std::pair("chunks", o.chunks)})
    if (count < 1)
      return makeScheduleError("--" + Twine(flag) +
                               " must be at least 1, got " + Twine(count));
  ScheduleOptions opts;
  opts.ranks = stages;
  opts.microbatches = *o.microbatches;
  opts.chunks = o.chunks;
  return ScheduleRegistry::getGlobal().build(o.schedule, opts);
}

} // namespace

Expected<std::string> emitSchedule(const CompileOptions &o) {
  std::string text;
  raw_string_ostream os(text);
  if (o.listSchedules) {
    ScheduleRegistry &registry = ScheduleRegistry::getGlobal();
    for (const std::string &name : registry.getNames())
      os << name << ": " << registry.lookup(name)->description << '\n';
    return text;
  }
  if (o.schedule.empty() && o.scheduleFile.empty())
    return driver::fail("--emit=schedule needs --schedule=<name> or "
                        "--schedule-file=<file>");
  if (!o.schedule.empty() && !o.scheduleFile.empty())
    return driver::fail("--schedule and --schedule-file exclude each other");

  // Every file to write, before any work.
  StringRef outputPath = o.output.empty() ? StringRef("-") : o.output;
  std::vector<std::pair<std::string, std::string>> files;
  if (outputPath != "-")
    files.emplace_back("-o", outputPath.str());
  for (const std::string &path : o.timelines)
    files.emplace_back("--timeline", path);
  if (!o.saveSchedule.empty())
    files.emplace_back("--save-schedule", o.saveSchedule);
  for (const auto &[flag, path] : files)
    if (std::string error = tessel::unwritable(flag, path); !error.empty())
      return driver::fail(error);

  Expected<ScheduleCosts> costs = ScheduleCosts::parse(o.costs);
  if (!costs)
    return driver::fail("--costs: " + toString(costs.takeError()));
  costs->optimizerStep = o.stepCost;
  costs->p2pLatency = o.p2pLatency;
  costs->p2pBandwidth = o.p2pBandwidth;
  costs->messageBytes = o.messageBytes;
  if (Error e = costs->validate())
    return fail(std::move(e));

  Expected<Schedule> schedule = getSchedule(o);
  if (!schedule)
    return fail(schedule.takeError());
  Expected<SimulationResult> sim = simulate(*schedule, *costs);
  if (!sim)
    return fail(sim.takeError());

  std::error_code ec;
  std::unique_ptr<ToolOutputFile> out;
  if (outputPath != "-") {
    out = std::make_unique<ToolOutputFile>(outputPath, ec, sys::fs::OF_Text);
    if (ec)
      return driver::fail("cannot write '" + outputPath + "': " +
                          ec.message());
  }
  printReport(out ? static_cast<raw_ostream &>(out->os()) : os, *schedule, *costs, *sim, !o.noActions);

  for (const std::string &path : o.timelines)
    if (Error e = writeTimelineFile(path, *schedule, *sim))
      return fail(std::move(e));
  if (!o.saveSchedule.empty()) {
    ToolOutputFile saved(o.saveSchedule, ec, sys::fs::OF_Text);
    if (ec)
      return driver::fail("cannot write schedule file '" + o.saveSchedule +
                          "': " + ec.message());
    printSchedule(saved.os(), *schedule);
    saved.keep();
  }
  if (out)
    out->keep();
  return text;
}

} // namespace tessel::driver
