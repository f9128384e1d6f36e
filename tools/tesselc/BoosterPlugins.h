//===- BoosterPlugins.h - tesselc --plugin: named option sets ---*- C++ -*-===//
//
// Colossal-AI's Booster plugins as Tessel option sets (docs/plugins.md):
// each composes with --mesh and --plan.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TOOLS_TESSELC_BOOSTERPLUGINS_H
#define TESSEL_TOOLS_TESSELC_BOOSTERPLUGINS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
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
  /// -tessel-zero's stage (0: none).
  int zeroStage;
  /// Gemini's chunks and their placement (--device-memory-limit, --chunk-mb).
  bool gemini = false;
};

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

#endif // TESSEL_TOOLS_TESSELC_BOOSTERPLUGINS_H
