//===- Trace.cpp - Chrome-trace timelines of tessel-run -------------------===//
#include "Trace.h"

#include "tessel/runtime/OpKind.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace tessel::run {

using runtime::Status;

namespace {

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

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
     << ", \"args\": {\"name\": " << jsonString("rank " + std::to_string(rank))
     << "}}";
  char num[64];
  for (const runtime::TraceEvent &e : events) {
    const runtime::Op &op = program.ops[e.op];
    const std::string kind = runtime::opKindName(op.kind);
    std::snprintf(num, sizeof(num), "%.3f, \"dur\": %.3f", e.beginUs, e.durUs);
    os << ",\n{\"name\": " << jsonString(op.name.empty() ? kind : op.name)
       << ", \"cat\": " << jsonString(kind) << ", \"ph\": \"X\", \"pid\": "
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
