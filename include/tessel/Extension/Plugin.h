//===- Plugin.h - A Tessel plugin's entry point ----------------*- C++ -*-===//
//
// A plugin is a shared library with one entry function, written with
// TESSEL_PLUGIN, that registers what it adds:
//
//   #include "tessel/Extension/Plugin.h"
//
//   TESSEL_PLUGIN("example", "1.0") {
//     registrar.addOp(fancyGelu());               // Op.h
//     registrar.addSchedule(mySchedule());        // Schedule.h
//     registrar.addGradientHandler(myHandler());  // GradientHandler.h
//     registrar.addParallelMode(myMode());        // ParallelMode.h
//   }
//
// `tesselc --load-plugin lib.so` and `tessel-run --load-plugin lib.so` load
// it; each registers into the registries Tessel's own ops, schedules and
// handlers live in, under the same rules (a name that exists is an error
// naming the plugin and the name). The same library serves both tools: the
// compiler uses the import, sharding and gradient rules and the schedules,
// tessel-run the kernels. An artifact compiled with a plugin's ops records
// the plugin (name, version) and tessel-run refuses it without the plugin.
//
// A plugin needs only the headers of this directory (find_package(Tessel),
// target Tessel::Extension) and links nothing of Tessel's.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_EXTENSION_PLUGIN_H
#define TESSEL_EXTENSION_PLUGIN_H

#include "tessel/Extension/GradientHandler.h"
#include "tessel/Extension/Op.h"
#include "tessel/Extension/ParallelMode.h"
#include "tessel/Extension/Schedule.h"
#include "tessel/Extension/Version.h"

namespace tessel::ext {

/// What a plugin's entry function registers into. A call that fails (a name
/// that exists, an incomplete definition) returns false; the load then fails
/// with its message, naming the plugin.
class Registrar {
public:
  virtual ~Registrar() = default;
  /// "tesselc" or "tessel-run".
  virtual std::string host() const = 0;
  virtual bool addOp(CustomOp op) = 0;
  virtual bool addSchedule(ScheduleDef schedule) = 0;
  virtual bool addGradientHandler(GradientHandlerDef handler) = 0;
  virtual bool addParallelMode(ParallelModeDef mode) = 0;
};

/// What tessel_plugin_info() returns. Its layout is frozen across API
/// versions, so that Tessel can read the version of any plugin and refuse a
/// mismatch by name.
struct PluginInfo {
  int apiVersion;
  const char *name;
  const char *version;
  void (*registerAll)(Registrar &registrar);
};

} // namespace tessel::ext

#define TESSEL_PLUGIN_ENTRY_SYMBOL "tessel_plugin_info"

/// Defines the plugin `name` (its version string `version`) and opens the
/// body of its entry function, which receives `registrar`.
#define TESSEL_PLUGIN(name, version)                                           \
  static void tesselPluginRegisterAll(::tessel::ext::Registrar &registrar);   \
  extern "C" __attribute__((visibility("default")))                            \
  const ::tessel::ext::PluginInfo *tessel_plugin_info() {                      \
    static const ::tessel::ext::PluginInfo info{                               \
        TESSEL_EXTENSION_API_VERSION, name, version,                           \
        &tesselPluginRegisterAll};                                             \
    return &info;                                                              \
  }                                                                            \
  static void tesselPluginRegisterAll(::tessel::ext::Registrar &registrar)

#endif // TESSEL_EXTENSION_PLUGIN_H
