//===- Host.h - Tessel's side of the extension API --------------*- C++ -*-===//
//
// The registries that plugins (include/tessel/Extension/) and Tessel's own
// built-ins register into, and the loader of plugin libraries. No MLIR,
// LLVM or protobuf: the runtime (tessel-run) and the compiler (tesselc) use
// the same tables. Registration happens at start-up, before any thread.
//
// Custom ops and gradient handlers live here; schedules go to whatever sink
// the tool installs (tesselc: the schedule registry of lib/Schedule, the one
// the built-in schedules are in), so that a plugin's schedule is one more
// entry there.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_EXTENSIONHOST_HOST_H
#define TESSEL_EXTENSIONHOST_HOST_H

#include "tessel/Extension/Plugin.h"

#include <functional>
#include <string>
#include <vector>

namespace tessel::ext::host {

/// A loaded plugin, or "tessel" for the built-ins.
struct PluginRecord {
  std::string name, version, path;
};

/// The plugins loaded so far, in load order.
const std::vector<PluginRecord> &loadedPlugins();

/// Loads the plugin library at `path` into `hostName` ("tesselc",
/// "tessel-run") and runs its entry function. Returns "" or an error that
/// names the file or the plugin: not loadable, not a Tessel plugin, built
/// against another API version (both versions), loaded twice, or a
/// registration that failed (the name it registered).
std::string loadPlugin(const std::string &path, const std::string &hostName);

/// Runs `registerAll` as the plugin `record` (one linked into the process;
/// loadPlugin() calls it for a loaded one). Returns "" or the registrations'
/// failures, one per line, each naming the plugin; the tool then stops.
std::string registerPlugin(const PluginRecord &record,
                           void (*registerAll)(Registrar &),
                           const std::string &hostName);

/// Runs `registerAll` as the built-in plugin "tessel": how Tessel registers
/// its own extensions through the plugins' API.
std::string registerBuiltins(void (*registerAll)(Registrar &),
                             const std::string &hostName);

/// Where schedules go. The default keeps their names only (tessel-run runs
/// schedules that the compiler lowered). Returns "" or why the schedule is
/// refused (a name that exists).
using ScheduleSink =
    std::function<std::string(const ScheduleDef &, const std::string &plugin)>;
void setScheduleSink(ScheduleSink sink);

/// The custom op `name`, or null.
const CustomOp *findOp(const std::string &name);
/// The plugin that registered op `name` ("" when none did).
std::string pluginOfOp(const std::string &name);
/// The custom op that imports ONNX `opType` of `domain` at that domain's
/// opset `version`: the newest registration not newer than it. Null when
/// none; `oldest` then gets the oldest since-version registered for it (0:
/// the op is unknown).
const CustomOp *findOnnxOp(const std::string &domain, const std::string &opType,
                           int64_t version, int *oldest = nullptr);

/// The gradient handler `name`, or null.
const GradientHandlerDef *findGradientHandler(const std::string &name);
std::string pluginOfGradientHandler(const std::string &name);
/// Registered handler names, sorted.
std::vector<std::string> gradientHandlerNames();

/// The parallel mode `name`, or null.
const ParallelModeDef *findParallelMode(const std::string &name);
std::string pluginOfParallelMode(const std::string &name);

} // namespace tessel::ext::host

#endif // TESSEL_EXTENSIONHOST_HOST_H
