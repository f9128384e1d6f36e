//===- YamlGuard.cpp - what llvm's YAML parser must not be given ----------===//

#include "tessel/Support/YamlGuard.h"

#include "tessel/support/JsonNesting.h"

#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"

#include <vector>

using llvm::StringRef;
using llvm::Twine;

namespace {

/// llvm's YAML parser recurses once per ',' of a run of empty entries in a
/// flow mapping (`{a: 1,,,,}`): 23,000 commas overflowed the stack (the plan
/// fuzzer's find; tesselc --plan died of SIGSEGV on 200,000). A run of
/// more than 256 commas with nothing but blanks and comments between them
/// is refused, wherever it is (no plan or cluster file writes one): the line of its 257th
/// comma, else 0.
size_t findLongCommaRun(StringRef text) {
  constexpr unsigned kMaxCommaRun = 256;
  unsigned run = 0;
  size_t line = 1;
  for (size_t i = 0, n = text.size(); i < n; ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
    } else if (c == ',') {
      if (++run > kMaxCommaRun)
        return line;
    } else if (c == '#' && run > 0) {
      while (i + 1 < n && text[i + 1] != '\n')
        ++i;
    } else if (c != ' ' && c != '\t' && c != '\r') {
      run = 0;
    }
  }
  return 0;
}

/// Where the text nests deeper than the limit: the line of the first
/// collection past it (0: nowhere), and how deep it goes there.
struct Nesting {
  unsigned line = 0;
  size_t depth = 0;
};

/// llvm's YAML parser builds nodes lazily and skips a value the plan reader
/// does not read (a rule's `replicate: [[[...]]]`) by recursing once per
/// level: a million brackets overflowed the stack (SIGSEGV; YAML and JSON
/// plans alike, JSON being YAML's flow syntax). This walk visits the nodes
/// of the first document depth first with a stack of its own, consuming
/// each collection before its parent moves on, so that the parser's own
/// skips find nothing left to do and never recurse. It measures what the
/// parser would (flow brackets, block indentation, compact `- - -`
/// entries, complex keys) and stops at the first collection past `limit`
/// (llvm's scanner costs time in proportion to the flow depth per token:
/// walking a million levels took 17 s); how deep the text goes from there is
/// counted by its brackets. The reader then parses the text afresh.
Nesting measureNesting(StringRef text, size_t limit) {
  llvm::SourceMgr sm;
  // Syntax errors are the real parse's to report.
  sm.setDiagHandler([](const llvm::SMDiagnostic &, void *) {}, nullptr);
  llvm::yaml::Stream stream(text, sm);
  auto doc = stream.begin();
  if (doc == stream.end())
    return {};
  // A collection being walked: its iterator, and for a mapping's current
  // entry whether its key (1) and value (2) were visited.
  struct Frame {
    llvm::yaml::SequenceNode *seq = nullptr;
    llvm::yaml::MappingNode *map = nullptr;
    llvm::yaml::SequenceNode::iterator seqIt;
    llvm::yaml::MappingNode::iterator mapIt;
    int visited = 0;
  };
  std::vector<Frame> stack;
  llvm::yaml::Node *deep = nullptr;
  // Starts walking `n` when it is a collection; false past the limit.
  auto enter = [&](llvm::yaml::Node *n) {
    Frame f;
    if ((f.seq = llvm::dyn_cast_or_null<llvm::yaml::SequenceNode>(n)))
      f.seqIt = f.seq->begin();
    else if ((f.map = llvm::dyn_cast_or_null<llvm::yaml::MappingNode>(n)))
      f.mapIt = f.map->begin();
    else
      return true;
    if (stack.size() == limit) {
      deep = n;
      return false;
    }
    stack.push_back(std::move(f));
    return true;
  };
  bool within = enter(doc->getRoot());
  while (within && !stack.empty()) {
    Frame &f = stack.back();
    if (f.seq) {
      if (f.seqIt == f.seq->end()) {
        stack.pop_back();
      } else if (!f.visited) {
        f.visited = 1;
        within = enter(&*f.seqIt);
      } else {
        f.visited = 0;
        ++f.seqIt;
      }
      continue;
    }
    if (f.mapIt == f.map->end()) {
      stack.pop_back();
    } else if (f.visited == 0) {
      f.visited = 1;
      within = enter(f.mapIt->getKey());
    } else if (f.visited == 1) {
      f.visited = 2;
      within = enter(f.mapIt->getValue());
    } else {
      f.visited = 0;
      ++f.mapIt;
    }
  }
  if (within)
    return {};
  Nesting out;
  out.line = 1;
  out.depth = limit + 1;
  llvm::SMLoc loc = deep->getSourceRange().Start;
  if (loc.isValid() && sm.FindBufferContainingLoc(loc)) {
    out.line = sm.getLineAndColumn(loc).first;
    // A node's range starts after its own bracket, at its first entry.
    size_t at = loc.getPointer() - text.data();
    if (at < text.size())
      out.depth += ::tessel::jsonNesting(text.substr(at), SIZE_MAX).depth;
  }
  return out;
}

} // namespace

llvm::Error tessel::checkYamlText(StringRef text, StringRef name,
                                  StringRef what, size_t maxDepth) {
  // YAML has no NUL character; llvm's scanner would stop at one.
  if (size_t nul = text.find('\0'); nul != StringRef::npos)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   name + ": a NUL byte at offset " +
                                       Twine(nul) + " (" + what +
                                       " is YAML or JSON text)");
  if (size_t line = findLongCommaRun(text))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   name + ":" + Twine(line) +
                                       ": more than 256 commas in a row "
                                       "(empty entries)");
  if (Nesting nest = measureNesting(text, maxDepth); nest.line)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        name + ":" + Twine(nest.line) + ": values nested at least " +
            Twine(nest.depth) + " deep, more than the " + Twine(maxDepth) +
            " " + what + " may nest");
  return llvm::Error::success();
}
