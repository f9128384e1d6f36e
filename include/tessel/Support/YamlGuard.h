//===- YamlGuard.h - what llvm's YAML parser must not be given --*- C++ -*-===//
//
// llvm's YAML parser, which reads plans and cluster files, crashes or
// crawls on some text: it stops at a NUL byte (and its diagnostics then
// point outside the buffer), recurses once per comma of a run of empty flow
// entries and once per level when it skips a nested value (stack overflows;
// the plan fuzzer's finds, docs/fuzzing.md). checkYamlText refuses such text
// before the parser sees it, naming the file, the line and the limit.
// LLVM Support only: shared by the plan reader and the cluster-file reader.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_SUPPORT_YAMLGUARD_H
#define TESSEL_SUPPORT_YAMLGUARD_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstddef>

namespace tessel {

/// Refuses a NUL byte, a run of more than 256 commas, and values nested
/// deeper than `maxDepth`. `name` starts the message ("plan.yaml:3: ...");
/// `what` names the format in it ("a plan", "a cluster file").
llvm::Error checkYamlText(llvm::StringRef text, llvm::StringRef name,
                          llvm::StringRef what, size_t maxDepth);

} // namespace tessel

#endif // TESSEL_SUPPORT_YAMLGUARD_H
