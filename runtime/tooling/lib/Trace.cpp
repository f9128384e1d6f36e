//===- Trace.cpp - Chrome-trace timelines of tessel-run -------------------===//
#include "tessel/tooling/Trace.h"

#include "tessel/tooling/Pipeline.h"

#include "tessel/runtime/Json.h"
#include "tessel/runtime/OpKind.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace tessel::tooling {

using runtime::Status;

namespace {

/// The events of one trace file, without the enclosing object.
std::string eventsOf(const std::string &text) {
  size_t b = text.find('['), e = text.rfind(']');
  if (b == std::string::npos || e == std::string::npos || e <= b)
    return "";
  return text.substr(b + 1, e - b - 1);
}

} // namespace

/// The phase of each instruction of a training step (a program with an
/// output `loss`): "forward" up to the instruction that computes the loss,
/// then "optimizer" for the update (instructions the optimizer pass names
/// after itself: sgd, adam, adamw; the copies into STATE buffers that end
/// the step) and "backward" for the rest. Empty for other programs.
std::vector<const char *> stepPhases(const runtime::Program &program) {
  const int loss = program.findOutput("loss");
  int last = -1;
  for (size_t i = 0; i < program.ops.size(); ++i)
    for (int r : program.ops[i].results)
      if (r == loss)
        last = static_cast<int>(i);
  if (loss < 0 || last < 0 || program.states.empty())
    return {};
  std::vector<const char *> phases(program.ops.size(), "forward");
  for (size_t i = last + 1; i < program.ops.size(); ++i) {
    const runtime::Op &op = program.ops[i];
    const bool toState =
        op.kind == runtime::OpKind::Copy && op.results.size() == 1 &&
        program.buffers[op.results[0]].kind ==
            runtime::BufferInfo::Kind::State;
    phases[i] = op.name == "sgd" || op.name == "adam" || op.name == "adamw" ||
                        toState
                    ? "optimizer"
                    : "backward";
  }
  return phases;
}

std::string rankTracePath(const std::string &path, int rank) {
  return path + ".rank" + std::to_string(rank);
}

Status writeTrace(const std::string &path, int rank,
                  const runtime::Program &program,
                  const std::vector<runtime::TraceEvent> &events) {
  std::ostringstream os;
  os << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  os << "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " << rank
     << ", \"args\": {\"name\": " << runtime::jsonQuote("rank " + std::to_string(rank))
     << "}}";
  char num[64];
  const std::vector<const char *> phases = stepPhases(program);
  for (const runtime::TraceEvent &e : events) {
    const runtime::Op &op = program.ops[e.op];
    const std::string kind = runtime::opKindName(op.kind);
    std::snprintf(num, sizeof(num), "%.3f, \"dur\": %.3f", e.beginUs, e.durUs);
    os << ",\n{\"name\": " << runtime::jsonQuote(op.name.empty() ? kind : op.name)
       << ", \"cat\": " << runtime::jsonQuote(kind) << ", \"ph\": \"X\", \"pid\": "
       << rank << ", \"tid\": 0, \"ts\": " << num
       << ", \"args\": {\"instruction\": " << e.op;
    if (!phases.empty())
      os << ", \"phase\": \"" << phases[e.op] << "\"";
    if (!op.action.empty())
      os << ", \"action\": " << runtime::jsonQuote(op.action.label());
    // Where the instruction reads and writes in the rank's arena: [offset,
    // bytes] per operand and result, null for one outside it (a weight, a
    // state, a constant). A result inside an operand's bytes is a view (a
    // reshape or a contiguous slice the buffer planner placed there): no
    // copy.
    auto ranges = [&](const char *key, const std::vector<int> &ids) {
      os << ", \"" << key << "\": [";
      for (size_t k = 0; k < ids.size(); ++k) {
        const runtime::BufferInfo &b = program.buffers[ids[k]];
        os << (k ? ", " : "");
        if (b.kind == runtime::BufferInfo::Kind::Arena)
          os << "[" << b.offset << ", " << b.bytes << "]";
        else
          os << "null";
      }
      os << "]";
    };
    ranges("arena_reads", op.operands);
    ranges("arena_writes", op.results);
    os << "}}";
  }
  // Pipelined programs: the schedule's actions on a track of their own
  // (tid 1): F/B/W/STEP per microbatch, sends, and receives (their span is
  // the time blocked waiting for the message).
  if (program.pipelined) {
    os << ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": " << rank
       << ", \"tid\": 1, \"args\": {\"name\": \"actions\"}}";
    os << ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": " << rank
       << ", \"tid\": 0, \"args\": {\"name\": \"instructions\"}}";
    for (const ActionSpan &a : actionSpans(program, events)) {
      std::snprintf(num, sizeof(num), "%.3f, \"dur\": %.3f", a.beginUs,
                    a.endUs - a.beginUs);
      os << ",\n{\"name\": " << runtime::jsonQuote(a.action.label())
         << ", \"cat\": " << runtime::jsonQuote(a.action.phase)
         << ", \"ph\": \"X\", \"pid\": " << rank << ", \"tid\": 1, \"ts\": "
         << num << ", \"args\": {\"stage\": " << a.action.stage
         << ", \"microbatch\": " << a.action.microbatch << "}}";
    }
  }
  os << "\n]}\n";
  return writeTextFile(path, os.str(), "trace");
}

Status writeTextFile(const std::string &path, const std::string &text,
                     const std::string &what) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f)
    return Status::error("cannot write the " + what + " " + path);
  return Status::ok();
}

Status readRankFiles(
    const std::string &path, int ranks, const std::string &what,
    const std::function<Status(int, const std::string &, std::istream &)>
        &read) {
  for (int r = 0; r < ranks; ++r) {
    std::string part = rankTracePath(path, r);
    std::ifstream f(part, std::ios::binary);
    if (!f)
      return Status::error("cannot read the " + what + " of rank " +
                           std::to_string(r) + " (" + part + ")");
    TSL_RETURN_IF_ERROR(read(r, part, f));
  }
  return Status::ok();
}

Status replaceRankFiles(const std::string &path, int ranks,
                        const std::string &text, const std::string &what) {
  TSL_RETURN_IF_ERROR(writeTextFile(path, text, what));
  for (int r = 0; r < ranks; ++r)
    std::remove(rankTracePath(path, r).c_str());
  return Status::ok();
}

Status mergeTraces(const std::string &path, int ranks) {
  std::string merged;
  TSL_RETURN_IF_ERROR(readRankFiles(
      path, ranks, "trace",
      [&](int, const std::string &, std::istream &f) -> Status {
        std::stringstream ss;
        ss << f.rdbuf();
        std::string events = eventsOf(ss.str());
        if (!events.empty())
          merged += (merged.empty() ? "" : ",") + events;
        return Status::ok();
      }));
  return replaceRankFiles(path, ranks,
                          "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [" +
                              merged + "]}\n",
                          "trace");
}

} // namespace tessel::tooling
