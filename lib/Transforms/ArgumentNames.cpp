//===- ArgumentNames.cpp - function arguments printed by name -------------===//

#include "tessel/Transforms/ArgumentNames.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;

namespace {

/// The `%name` at `loc` in the text `sm` holds: the name without `%`, or ""
/// where `loc` is not in that text or no SSA name starts there.
StringRef ssaNameAt(llvm::SourceMgr &sm, FileLineColLoc loc) {
  for (unsigned id = 1, e = sm.getNumBuffers(); id <= e; ++id) {
    const llvm::MemoryBuffer *buffer = sm.getMemoryBuffer(id);
    if (buffer->getBufferIdentifier() != loc.getFilename().getValue())
      continue;
    llvm::SMLoc at =
        sm.FindLocForLineAndColumn(id, loc.getLine(), loc.getColumn());
    if (!at.isValid())
      return "";
    StringRef rest(at.getPointer(), buffer->getBufferEnd() - at.getPointer());
    if (!rest.consume_front("%"))
      return "";
    // suffix-id ::= digit+ | (letter | id-punct) (letter | id-punct | digit)*
    size_t n = 0;
    while (n < rest.size() &&
           (llvm::isAlnum(rest[n]) || StringRef("$._-").contains(rest[n])))
      ++n;
    return rest.take_front(n);
  }
  return "";
}

/// `%argN` for argument N: the name MLIR prints without one.
bool isDefaultName(StringRef name, unsigned argNumber) {
  return name == ("arg" + Twine(argNumber)).str();
}

/// `loc` without its NameLocs (each replaced by the location it names).
Location withoutNames(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return withoutNames(name.getChildLoc());
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    SmallVector<Location> parts;
    for (Location part : fused.getLocations())
      parts.push_back(withoutNames(part));
    return FusedLoc::get(parts, fused.getMetadata(), loc->getContext());
  }
  if (auto call = dyn_cast<CallSiteLoc>(loc))
    return CallSiteLoc::get(withoutNames(call.getCallee()),
                            withoutNames(call.getCaller()));
  if (auto opaque = dyn_cast<OpaqueLoc>(loc))
    return withoutNames(opaque.getFallbackLocation());
  return loc;
}

/// Replaces the locations of `root`'s ops that have results by the same
/// without names; returns what they were.
SmallVector<std::pair<Operation *, Location>>
forgetResultNames(Operation *root) {
  SmallVector<std::pair<Operation *, Location>> saved;
  root->walk([&](Operation *op) {
    if (op->getNumResults() == 0)
      return;
    Location bare = withoutNames(op->getLoc());
    if (bare == op->getLoc())
      return;
    saved.emplace_back(op, op->getLoc());
    op->setLoc(bare);
  });
  return saved;
}

/// Whether --mlir-use-nameloc-as-prefix was given on the command line.
bool prefixOptionGiven() {
  auto &options = llvm::cl::getRegisteredOptions();
  auto it = options.find("mlir-use-nameloc-as-prefix");
  return it != options.end() && it->second->getNumOccurrences() > 0;
}

struct NameArgumentsFromSourcePass
    : PassWrapper<NameArgumentsFromSourcePass, OperationPass<>> {
  NameArgumentsFromSourcePass(StringRef bufferName, StringRef text)
      : bufferName(bufferName.str()), text(text) {}
  StringRef getArgument() const final {
    return "tessel-name-arguments-from-source";
  }
  StringRef getDescription() const final {
    return "Keep the %names function arguments were written with";
  }
  void runOnOperation() final {
    llvm::SourceMgr sm;
    sm.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBuffer(text, bufferName,
                                         /*RequiresNullTerminator=*/false),
        llvm::SMLoc());
    tessel::nameArgumentsFromSource(getOperation(), sm);
    markAllAnalysesPreserved();
  }
  std::string bufferName;
  StringRef text;
};

struct ForgetResultNamesPass
    : PassWrapper<ForgetResultNamesPass, OperationPass<>> {
  StringRef getArgument() const final { return "tessel-forget-result-names"; }
  StringRef getDescription() const final {
    return "Drop the names from op locations before printing without them";
  }
  void runOnOperation() final {
    (void)forgetResultNames(getOperation());
    markAllAnalysesPreserved();
  }
};

} // namespace

void tessel::nameArgumentsFromSource(Operation *root,
                                     llvm::SourceMgr &sourceMgr) {
  root->walk([&](FunctionOpInterface fn) {
    if (fn.isExternal())
      return;
    for (BlockArgument arg : fn.getArguments()) {
      if (arg.getLoc()->findInstanceOf<NameLoc>())
        continue; // the importer's input name, or an explicit loc("name")
      auto at = dyn_cast<FileLineColLoc>(arg.getLoc());
      if (!at)
        continue;
      StringRef name = ssaNameAt(sourceMgr, at);
      if (name.empty() || isDefaultName(name, arg.getArgNumber()))
        continue;
      arg.setLoc(NameLoc::get(StringAttr::get(root->getContext(), name), at));
    }
  });
}

bool tessel::printsArgumentNames(const OpPrintingFlags &flags) {
  return !flags.shouldPrintDebugInfo() && !prefixOptionGiven();
}

void tessel::printWithArgumentNames(Operation *root, llvm::raw_ostream &os,
                                    OpPrintingFlags flags) {
  if (!printsArgumentNames(flags)) {
    root->print(os, flags);
    return;
  }
  auto saved = forgetResultNames(root);
  root->print(os, flags.printNameLocAsPrefix());
  for (auto &[op, loc] : saved)
    op->setLoc(loc);
}

std::unique_ptr<Pass>
tessel::createNameArgumentsFromSourcePass(StringRef bufferName,
                                          StringRef text) {
  return std::make_unique<NameArgumentsFromSourcePass>(bufferName, text);
}

std::unique_ptr<Pass> tessel::createForgetResultNamesPass() {
  return std::make_unique<ForgetResultNamesPass>();
}
