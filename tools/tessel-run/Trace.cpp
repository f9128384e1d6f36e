//===- Trace.cpp - Chrome-trace timelines of tessel-run -------------------===//
#include "Trace.h"

#include "tessel/runtime/Json.h"
#include "tessel/runtime/OpKind.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace tessel::run {

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
  for (const runtime::TraceEvent &e : events) {
    const runtime::Op &op = program.ops[e.op];
    const std::string kind = runtime::opKindName(op.kind);
    std::snprintf(num, sizeof(num), "%.3f, \"dur\": %.3f", e.beginUs, e.durUs);
    os << ",\n{\"name\": " << runtime::jsonQuote(op.name.empty() ? kind : op.name)
       << ", \"cat\": " << runtime::jsonQuote(kind) << ", \"ph\": \"X\", \"pid\": "
       << rank << ", \"tid\": 0, \"ts\": " << num
       << ", \"args\": {\"instruction\": " << e.op << "}}";
  }
  os << "\n]}\n";
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << os.str();
  f.close();
  if (!f)
    return Status::error("cannot write the trace " + path);
  return Status::ok();
}

Status mergeTraces(const std::string &path, int ranks) {
  std::string merged;
  for (int r = 0; r < ranks; ++r) {
    std::string part = rankTracePath(path, r);
    std::ifstream f(part, std::ios::binary);
    if (!f)
      return Status::error("cannot read the trace of rank " + std::to_string(r) +
                           " (" + part + ")");
    std::stringstream ss;
    ss << f.rdbuf();
    std::string events = eventsOf(ss.str());
    if (!events.empty())
      merged += (merged.empty() ? "" : ",") + events;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [" << merged << "]}\n";
  out.close();
  if (!out)
    return Status::error("cannot write the trace " + path);
  for (int r = 0; r < ranks; ++r)
    std::remove(rankTracePath(path, r).c_str());
  return Status::ok();
}

} // namespace tessel::run
