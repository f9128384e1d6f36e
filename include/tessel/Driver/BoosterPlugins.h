//===- BoosterPlugins.h - --plugin: named option sets -----------*- C++ -*-===//
//
// Colossal-AI's Booster plugins as Tessel option sets (docs/plugins.md):
// each composes with --mesh and --plan.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_DRIVER_BOOSTERPLUGINS_H
#define TESSEL_DRIVER_BOOSTERPLUGINS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tessel {

struct Plugin {
  llvm::StringRef name;
  /// One line for --list-plugins.
  llvm::StringRef summary;
  /// -tessel-zero's stage (0: none; hybrid's: its zero= option).
  int zeroStage;
  /// Gemini's chunks and their placement (--device-memory-limit, --chunk-mb).
  bool gemini = false;
};

/// --plugin hybrid:KEY=VALUE,... (Colossal-AI's HybridParallelPlugin): the
/// mesh's sizes, the ZeRO stage over dp and the pipeline's options. 0 or
/// "": not given.
struct HybridOptions {
  int64_t dp = 0, tp = 0, pp = 0;
  /// -tessel-zero's stage over dp (0: none, 3: fsdp).
  int64_t zero = 0;
  int64_t microbatches = 0, chunks = 0;
  std::string schedule, precision;
};

/// Parses what follows "hybrid" in --plugin: "" or ":KEY=VALUE,...", the
/// keys dp, tp, pp, zero, microbatches, chunks, schedule, precision.
llvm::Expected<HybridOptions> parseHybridOptions(llvm::StringRef options);

/// Every plugin, in --list-plugins order.
llvm::ArrayRef<Plugin> plugins();

/// The plugin named `name`, or null.
const Plugin *findPlugin(llvm::StringRef name);

/// "ddp, zero1, ...": for errors.
std::string pluginNames();

/// --list-plugins: one line each.
void listPlugins(llvm::raw_ostream &os);

/// "" when `plugin` composes with `mesh` (the axis dp, size >= 1), else the
/// error.
std::string checkPluginMesh(const Plugin &plugin,
                            const std::vector<std::pair<std::string, int64_t>> &mesh);

/// A byte count as --device-memory-limit takes it: a number with an
/// optional unit, binary (KiB, MiB, GiB, TiB) or decimal (kB, KB, MB, GB,
/// TB; B), e.g. 2GiB, 512MiB, 1.5GB, 1e9. std::nullopt when unparsable,
/// negative or beyond int64.
std::optional<int64_t> parseByteSize(llvm::StringRef text);

} // namespace tessel

#endif // TESSEL_DRIVER_BOOSTERPLUGINS_H
