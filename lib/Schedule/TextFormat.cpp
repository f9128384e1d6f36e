//===- TextFormat.cpp - Schedules as text ---------------------------------===//

#include "tessel/Schedule/TextFormat.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <tuple>

using namespace llvm;

namespace tessel::pipeline {

void printSchedule(raw_ostream &os, const Schedule &s) {
  os << "# schedule '" << s.getName() << "': " << s.getNumRanks() << " ranks, "
     << s.getNumStages() << " stages, " << s.getNumMicrobatches()
     << " microbatches\n";
  for (int32_t r = 0; r < s.getNumRanks(); ++r) {
    os << "rank " << r << ":";
    for (const Action &a : s.getActions(r)) {
      os << ' ';
      printAction(os, a);
    }
    os << '\n';
  }
}

std::string formatSchedule(const Schedule &s) {
  std::string text;
  raw_string_ostream os(text);
  printSchedule(os, s);
  return text;
}

namespace {
class Parser {
public:
  Parser(StringRef text, StringRef bufferName)
      : text(text), bufferName(bufferName) {}

  Expected<Schedule> parse(StringRef scheduleName);

private:
  Error error(size_t line, size_t column, const Twine &msg) const {
    return makeScheduleError(bufferName + ":" + Twine(line) + ":" +
                             Twine(column) + ": " + msg);
  }

  StringRef text, bufferName;
};
} // namespace

// Bounds that keep a typo such as `0F9999999999` from allocating gigabytes.
static constexpr int32_t kMaxStage = (1 << 16) - 1;
static constexpr int32_t kMaxMicrobatch = (1 << 20) - 1;

static bool isSeparator(char c) { return c == ',' || isSpace(c); }

Expected<Schedule> Parser::parse(StringRef scheduleName) {
  std::vector<std::vector<Action>> ranks;
  std::vector<size_t> rankLine;
  // For each stage: the rank holding it and the line that said so.
  std::vector<int32_t> placement;
  std::vector<size_t> placementLine;
  enum class Style { Unknown, Ranked, Csv } style = Style::Unknown;
  int32_t maxMicrobatch = -1;

  size_t lineNo = 0;
  StringRef rest = text;
  while (!rest.empty()) {
    // Not a structured binding: the lambda below captures it (C++17).
    StringRef rawLine;
    std::tie(rawLine, rest) = rest.split('\n');
    ++lineNo;
    StringRef line = rawLine.split('#').first.rtrim();
    auto columnOf = [&](StringRef part) {
      return size_t(part.data() - rawLine.data()) + 1;
    };
    StringRef body = line.ltrim();
    if (body.empty())
      continue;

    int32_t rank;
    if (body.starts_with("rank") &&
        (body.size() == 4 || isSpace(body[4]) || isDigit(body[4]))) {
      if (style == Style::Csv)
        return error(lineNo, columnOf(body),
                     "'rank N:' line in a file of CSV rows");
      style = Style::Ranked;
      StringRef afterKw = body.drop_front(4).ltrim();
      StringRef digits = afterKw.take_while(isDigit);
      unsigned long long v;
      if (digits.empty() || digits.getAsInteger(10, v) || v > 1u << 20)
        return error(lineNo, columnOf(afterKw),
                     "expected a rank number after 'rank'");
      StringRef afterNum = afterKw.drop_front(digits.size()).ltrim();
      if (!afterNum.starts_with(":"))
        return error(lineNo, columnOf(afterNum),
                     "expected ':' after 'rank " + digits + "'");
      rank = int32_t(v);
      body = afterNum.drop_front(1);
    } else {
      if (style == Style::Ranked)
        return error(lineNo, columnOf(body),
                     "expected 'rank N:' at the start of the line");
      style = Style::Csv;
      rank = int32_t(ranks.size());
    }
    if (size_t(rank) >= ranks.size()) {
      ranks.resize(rank + 1);
      rankLine.resize(rank + 1, 0);
    }
    if (rankLine[rank] != 0)
      return error(lineNo, 1,
                   "rank " + Twine(rank) + " is listed twice (first on line " +
                       Twine(rankLine[rank]) + ")");
    rankLine[rank] = lineNo;

    std::vector<Action> &list = ranks[rank];
    while (true) {
      body = body.drop_while(isSeparator);
      if (body.empty())
        break;
      StringRef token = body.take_until(isSeparator);
      body = body.drop_front(token.size());
      Expected<Action> a = parseAction(token);
      if (!a)
        return error(lineNo, columnOf(token), toString(a.takeError()));
      if (a->stage > kMaxStage || a->microbatch > kMaxMicrobatch)
        return error(lineNo, columnOf(token),
                     "action '" + token + "' exceeds the limits of " +
                         Twine(kMaxStage + 1) + " stages and " +
                         Twine(kMaxMicrobatch + 1) + " microbatches");
      if (size_t(a->stage) >= placement.size()) {
        placement.resize(a->stage + 1, -1);
        placementLine.resize(a->stage + 1, 0);
      }
      int32_t &owner = placement[a->stage];
      if (owner == -1) {
        owner = rank;
        placementLine[a->stage] = lineNo;
      } else if (owner != rank) {
        return error(lineNo, columnOf(token),
                     "stage " + Twine(a->stage) + " appears on rank " +
                         Twine(rank) + " and on rank " + Twine(owner) +
                         " (line " + Twine(placementLine[a->stage]) + ")");
      }
      maxMicrobatch = std::max(maxMicrobatch, a->microbatch);
      list.push_back(*a);
    }
  }

  if (ranks.empty())
    return makeScheduleError(bufferName + ": no rank lists in the schedule");
  for (size_t r = 0; r < ranks.size(); ++r)
    if (rankLine[r] == 0)
      return makeScheduleError(bufferName + ": rank " + Twine(r) +
                               " has no line");
  for (size_t st = 0; st < placement.size(); ++st)
    if (placement[st] == -1)
      return makeScheduleError(bufferName + ": stage " + Twine(st) +
                               " appears in no rank's list");
  for (size_t r = 0; r < ranks.size(); ++r)
    if (ranks[r].empty())
      return makeScheduleError(bufferName + ":" + Twine(rankLine[r]) +
                               ": rank " + Twine(r) + " has no actions");
  if (maxMicrobatch < 0)
    return makeScheduleError(bufferName + ": no action names a microbatch");

  Expected<Schedule> s =
      Schedule::create(scheduleName.str(), int32_t(ranks.size()),
                       maxMicrobatch + 1, std::move(placement));
  if (!s)
    return makeScheduleError(bufferName + ": " + toString(s.takeError()));
  for (size_t r = 0; r < ranks.size(); ++r)
    s->getMutableActions(int32_t(r)) = std::move(ranks[r]);
  return s;
}

Expected<Schedule> parseSchedule(StringRef text, StringRef bufferName,
                                 StringRef scheduleName) {
  return Parser(text, bufferName).parse(scheduleName);
}

Expected<Schedule> readScheduleFile(StringRef path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (!buffer)
    return makeScheduleError("cannot read schedule file '" + path +
                             "': " + buffer.getError().message());
  return parseSchedule((*buffer)->getBuffer(), path, sys::path::stem(path));
}

} // namespace tessel::pipeline
