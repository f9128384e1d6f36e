//===- EmitSchedule.cpp - tesselc --emit=schedule -------------------------===//
//
// A thin driver over TesselSchedule: read the options, build or load the
// schedule, simulate it, print. All checking of schedules is the library's.
//
//===----------------------------------------------------------------------===//

#include "EmitSchedule.h"
#include "Compile.h"
#include "Writable.h"

#include "tessel/Schedule/Registry.h"
#include "tessel/Schedule/Report.h"
#include "tessel/Schedule/Simulator.h"
#include "tessel/Schedule/TextFormat.h"
#include "tessel/Schedule/Timeline.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace tessel::pipeline;

namespace tessel {

cl::OptionCategory &getScheduleCategory() {
  static cl::OptionCategory category(
      "Pipeline schedule options (--emit=schedule)",
      "Generate or load a per-rank pipeline schedule, verify it, simulate it "
      "and print the action lists and figures.");
  return category;
}

namespace {
cl::opt<std::string> scheduleName(
    "schedule", cl::value_desc("name"),
    cl::desc("Schedule to generate: gpipe, 1f1b, interleaved-1f1b, zb-h1, or "
             "any registered one (see --list-schedules)"),
    cl::cat(getScheduleCategory()));
cl::opt<std::string> scheduleFile(
    "schedule-file", cl::value_desc("file"),
    cl::desc("Load the schedule from a text or CSV file of actions instead "
             "(see docs/pipeline.md)"),
    cl::cat(getScheduleCategory()));
cl::opt<std::string> stagesOpt(
    "stages", cl::value_desc("p|auto"),
    cl::desc("Pipeline depth: number of pipeline ranks (--emit=schedule). "
             "With --train and a pp mesh axis: 'auto' balances the stages "
             "with the cost model instead of the plan's stage rules"),
    cl::cat(getScheduleCategory()));
cl::opt<int> microbatches("microbatches", cl::value_desc("m"),
                          cl::desc("Microbatches per training step"),
                          cl::cat(getScheduleCategory()));
cl::opt<int> chunks("chunks", cl::value_desc("v"), cl::init(1),
                    cl::desc("Model chunks per rank (interleaved-1f1b); "
                             "default 1"),
                    cl::cat(getScheduleCategory()));
cl::opt<std::string>
    costsOpt("costs", cl::value_desc("F,B,W"), cl::init("1,1,1"),
             cl::desc("Cost of a forward, an input-gradient backward and a "
                      "weight-gradient backward; a fused backward costs B+W. "
                      "Default 1,1,1. Per stage: F0,B0,W0;F1,B1,W1;..."),
             cl::cat(getScheduleCategory()));
cl::opt<double> stepCost("step-cost", cl::value_desc("t"), cl::init(0.0),
                         cl::desc("Cost of an optimizer step; default 0"),
                         cl::cat(getScheduleCategory()));
cl::opt<double> p2pLatency("p2p-latency", cl::value_desc("t"), cl::init(0.0),
                           cl::desc("Latency of one send/recv; default 0"),
                           cl::cat(getScheduleCategory()));
cl::opt<double>
    p2pBandwidth("p2p-bandwidth", cl::value_desc("bytes/unit"), cl::init(0.0),
                 cl::desc("Bandwidth of a send/recv; default 0, unlimited"),
                 cl::cat(getScheduleCategory()));
cl::opt<double> messageBytes(
    "message-bytes", cl::value_desc("n"), cl::init(0.0),
    cl::desc("Bytes of one activation or gradient message; default 0"),
    cl::cat(getScheduleCategory()));
cl::list<std::string>
    timelines("timeline", cl::value_desc("file.json|file.svg"),
              cl::desc("Write the simulated timeline: .json for Chrome trace / "
                       "Perfetto, .svg for a picture; may be repeated"),
              cl::cat(getScheduleCategory()));
cl::opt<std::string> saveSchedule(
    "save-schedule", cl::value_desc("file"),
    cl::desc("Write the verified schedule in its text form (loadable with "
             "--schedule-file)"),
    cl::cat(getScheduleCategory()));
cl::opt<bool> listSchedules("list-schedules",
                            cl::desc("List the registered schedules and exit"),
                            cl::cat(getScheduleCategory()));
cl::opt<bool>
    noActions("no-actions",
              cl::desc("Print only the figures, not the action lists"),
              cl::cat(getScheduleCategory()));

int fail(Error e) { return tessel::fail(toString(std::move(e))); }

Expected<Schedule> getSchedule() {
  if (!scheduleFile.empty()) {
    Expected<Schedule> s = loadSchedule(scheduleFile);
    if (!s)
      return s.takeError();
    int stages = 0;
    if (stagesOpt.getNumOccurrences() &&
        (StringRef(stagesOpt).getAsInteger(10, stages) ||
         stages != s->getNumRanks()))
      return makeScheduleError(
          "--stages " + Twine(stagesOpt) + " does not match the " +
          Twine(s->getNumRanks()) + " ranks of schedule file '" + scheduleFile +
          "'");
    if (microbatches.getNumOccurrences() &&
        microbatches != s->getNumMicrobatches())
      return makeScheduleError(
          "--microbatches " + Twine(microbatches) + " does not match the " +
          Twine(s->getNumMicrobatches()) + " microbatches of schedule file '" +
          scheduleFile + "'");
    return s;
  }
  if (!stagesOpt.getNumOccurrences())
    return makeScheduleError("--stages is required with --schedule");
  int stages = 0;
  if (StringRef(stagesOpt).getAsInteger(10, stages))
    return makeScheduleError("--stages must be a number with --emit=schedule, "
                             "got '" + Twine(stagesOpt) + "'");
  if (!microbatches.getNumOccurrences())
    return makeScheduleError("--microbatches is required with --schedule");
  if (stages < 1)
    return makeScheduleError("--stages must be at least 1, got " +
                             Twine(stages));
  for (const cl::opt<int> *count : {&microbatches, &chunks})
    if (*count < 1)
      return makeScheduleError("--" + count->ArgStr +
                               " must be at least 1, got " +
                               Twine(int(*count)));
  ScheduleOptions opts;
  opts.ranks = stages;
  opts.microbatches = microbatches;
  opts.chunks = chunks;
  return ScheduleRegistry::getGlobal().build(scheduleName, opts);
}
} // namespace

PipelineFlags getPipelineFlags() {
  PipelineFlags f;
  if (scheduleName.getNumOccurrences())
    f.schedule = scheduleName;
  f.scheduleFile = scheduleFile;
  f.chunks = chunks;
  f.stages = stagesOpt;
  return f;
}

int emitSchedule(StringRef outputPath) {
  if (listSchedules) {
    ScheduleRegistry &registry = ScheduleRegistry::getGlobal();
    for (const std::string &name : registry.getNames())
      outs() << name << ": " << registry.lookup(name)->description << '\n';
    return 0;
  }
  if (scheduleName.empty() && scheduleFile.empty())
    return fail("--emit=schedule needs --schedule=<name> or "
                "--schedule-file=<file>");
  if (!scheduleName.empty() && !scheduleFile.empty())
    return fail("--schedule and --schedule-file exclude each other");

  // Every file to write, before any work.
  std::vector<std::pair<std::string, std::string>> files;
  if (outputPath != "-")
    files.emplace_back("-o", outputPath.str());
  for (const std::string &path : timelines)
    files.emplace_back("--timeline", path);
  if (!saveSchedule.empty())
    files.emplace_back("--save-schedule", saveSchedule);
  for (const auto &[flag, path] : files)
    if (std::string error = tessel::unwritable(flag, path); !error.empty())
      return fail(error);

  Expected<ScheduleCosts> costs = ScheduleCosts::parse(costsOpt);
  if (!costs)
    return fail("--costs: " + toString(costs.takeError()));
  costs->optimizerStep = stepCost;
  costs->p2pLatency = p2pLatency;
  costs->p2pBandwidth = p2pBandwidth;
  costs->messageBytes = messageBytes;
  if (Error e = costs->validate())
    return fail(std::move(e));

  Expected<Schedule> schedule = getSchedule();
  if (!schedule)
    return fail(schedule.takeError());
  Expected<SimulationResult> sim = simulate(*schedule, *costs);
  if (!sim)
    return fail(sim.takeError());

  std::error_code ec;
  ToolOutputFile out(outputPath, ec, sys::fs::OF_Text);
  if (ec)
    return fail("cannot write '" + outputPath + "': " + ec.message());
  printReport(out.os(), *schedule, *costs, *sim, !noActions);

  for (const std::string &path : timelines)
    if (Error e = writeTimelineFile(path, *schedule, *sim))
      return fail(std::move(e));
  if (!saveSchedule.empty()) {
    ToolOutputFile saved(saveSchedule, ec, sys::fs::OF_Text);
    if (ec)
      return fail("cannot write schedule file '" + saveSchedule +
                  "': " + ec.message());
    printSchedule(saved.os(), *schedule);
    saved.keep();
  }
  out.keep();
  return 0;
}

} // namespace tessel
