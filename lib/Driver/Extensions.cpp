//===- Extensions.cpp - --load-plugin, --grad-handler, --list-* -----------===//
//
// Loads the plugins named in the options (docs/extending.md) into the
// registries the built-ins are in: ops for the importer, schedules for the
// schedule registry, gradient handlers for --grad-handler.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "tessel/Driver/BoosterPlugins.h"
#include "tessel/ExtensionHost/Host.h"
#include "tessel/Import/ListNodes.h"
#include "tessel/Schedule/ExtensionSchedules.h"
#include "tessel/Transforms/GradHandler.h"

#include "llvm/Support/raw_ostream.h"

#include <mutex>

using namespace llvm;

namespace tessel::driver {

Error loadExtensions(const CompileOptions &options) {
  // The extension registries are the process's, unguarded: one loader at a
  // time.
  static std::mutex lock;
  std::lock_guard<std::mutex> guard(lock);
  pipeline::installExtensionSchedules();
  if (std::string err = mlir::tessel::ensureBuiltinExtensions("tesselc");
      !err.empty())
    return fail(err);
  for (const std::string &path : options.loadPlugins)
    if (std::string err = ext::host::loadPlugin(path, "tesselc"); !err.empty())
      return fail(err);
  if (!options.gradHandler.empty() &&
      !ext::host::findGradientHandler(options.gradHandler)) {
    std::string known;
    for (const std::string &n : ext::host::gradientHandlerNames())
      known += (known.empty() ? "" : ", ") + n;
    return fail("unknown gradient handler '" + options.gradHandler +
                "' (known: " + known + "; a plugin's needs --load-plugin)");
  }
  return Error::success();
}

std::string listPlugins() {
  std::string text;
  raw_string_ostream os(text);
  tessel::listPlugins(os);
  return text;
}

Expected<std::string> listNodes(StringRef model) {
  if (model.empty() || model.ends_with(".mlir"))
    return fail("--list-nodes needs an ONNX model "
                "(tesselc model.onnx --list-nodes)");
  std::string text;
  raw_string_ostream os(text);
  if (Error err = mlir::tessel::listNodes(model, os))
    return fail(toString(std::move(err)));
  return text;
}

} // namespace tessel::driver
