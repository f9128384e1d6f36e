//===- Plugins.cpp - tesselc --load-plugin, --grad-handler ----------------===//
//
// Loads the plugins named on the command line (docs/extending.md) into the
// registries the built-ins are in: ops for the importer, schedules for the
// schedule registry, gradient handlers for --grad-handler.
//
//===----------------------------------------------------------------------===//

#include "Compile.h"
#include "Plugins.h"

#include "tessel/ExtensionHost/Host.h"
#include "tessel/Schedule/ExtensionSchedules.h"
#include "tessel/Transforms/GradHandler.h"

using namespace llvm;

namespace {

cl::OptionCategory pluginCategory("Plugin options");

cl::list<std::string> pluginPaths(
    "load-plugin", cl::value_desc("lib.so"),
    cl::desc("Load a Tessel plugin (docs/extending.md): its ops, schedules, "
             "gradient handlers and parallel modes join the built-ins; "
             "repeatable"),
    cl::cat(pluginCategory));

cl::opt<std::string> gradHandler(
    "grad-handler", cl::value_desc("name"),
    cl::desc("With --train on a mesh: what reduces the data-parallel "
             "gradients before the optimizer: ddp (the plain all_reduce, "
             "default) or a plugin's handler"),
    cl::init(""), cl::cat(tessel::getTrainingCategory()));

} // namespace

cl::OptionCategory &tessel::getPluginCategory() { return pluginCategory; }

std::string tessel::gradHandlerName() { return gradHandler; }

int tessel::loadPlugins() {
  pipeline::installExtensionSchedules();
  if (std::string err = mlir::tessel::ensureBuiltinExtensions("tesselc");
      !err.empty())
    return fail(err);
  for (const std::string &path : pluginPaths)
    if (std::string err = ext::host::loadPlugin(path, "tesselc"); !err.empty())
      return fail(err);
  if (!gradHandler.empty() && !ext::host::findGradientHandler(gradHandler)) {
    std::string known;
    for (const std::string &n : ext::host::gradientHandlerNames())
      known += (known.empty() ? "" : ", ") + n;
    return fail("unknown gradient handler '" + gradHandler + "' (known: " +
                known + "; a plugin's needs --load-plugin)");
  }
  return 0;
}
