//===- Plugins.h - tesselc --load-plugin ------------------------*- C++ -*-===//
#ifndef TESSEL_TOOLS_TESSELC_PLUGINS_H
#define TESSEL_TOOLS_TESSELC_PLUGINS_H

#include "llvm/Support/CommandLine.h"

namespace tessel {

/// The plugin options, for --help grouping.
llvm::cl::OptionCategory &getPluginCategory();

/// Registers the built-in extensions, then loads every --load-plugin, in
/// order. Returns 0, or the exit code after printing the error.
int loadPlugins();

} // namespace tessel

#endif // TESSEL_TOOLS_TESSELC_PLUGINS_H
