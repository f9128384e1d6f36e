//===- PluginLoader.cpp - dlopen a plugin, check it, register it ----------===//
//
// A plugin is kept loaded for the life of the process (its functions are in
// the registries). It is opened RTLD_LOCAL: it links nothing of Tessel's and
// sees Tessel only through the Registrar it is handed.
//
//===----------------------------------------------------------------------===//

#include "tessel/ExtensionHost/Host.h"

#include <dlfcn.h>

namespace tessel::ext::host {

std::string loadPlugin(const std::string &path, const std::string &hostName) {
  if (path.empty())
    return "--load-plugin needs the path of a plugin library";
  // dlopen searches the library path for a bare name; a plugin is a file.
  std::string file =
      path.find('/') == std::string::npos ? "./" + path : path;
  void *handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    return "cannot load plugin '" + path + "': " + (why ? why : "unknown error");
  }
  using InfoFn = const PluginInfo *(*)();
  auto info = reinterpret_cast<InfoFn>(dlsym(handle, TESSEL_PLUGIN_ENTRY_SYMBOL));
  if (!info) {
    dlclose(handle);
    return "'" + path + "' is not a Tessel plugin: it has no " +
           TESSEL_PLUGIN_ENTRY_SYMBOL +
           " (define one with TESSEL_PLUGIN from tessel/Extension/Plugin.h)";
  }
  const PluginInfo *p = info();
  if (!p || !p->name || !*p->name || !p->registerAll) {
    dlclose(handle);
    return "'" + path + "' is not a Tessel plugin: its " +
           TESSEL_PLUGIN_ENTRY_SYMBOL + " gives no name or entry function";
  }
  std::string name = p->name;
  if (p->apiVersion != TESSEL_EXTENSION_API_VERSION) {
    std::string err = "plugin '" + name + "' (" + path +
                      ") was built against Tessel extension API version " +
                      std::to_string(p->apiVersion) +
                      ", but this Tessel has version " +
                      std::to_string(TESSEL_EXTENSION_API_VERSION) +
                      "; rebuild it against this Tessel's headers";
    dlclose(handle);
    return err;
  }
  return registerPlugin({name, p->version ? p->version : "", path},
                        p->registerAll, hostName);
}

} // namespace tessel::ext::host
