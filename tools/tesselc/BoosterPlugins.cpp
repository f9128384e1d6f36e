//===- Plugins.cpp - tesselc --plugin: named sets of options --------------===//

#include "BoosterPlugins.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"

using namespace llvm;

namespace tessel {

ArrayRef<Plugin> plugins() {
  static const Plugin all[] = {
      {"ddp",
       "data parallel: batch over dp, gradients all-reduced in buckets "
       "(--bucket-mb), every rank updates every parameter",
       0},
      {"zero1",
       "ZeRO-1: as ddp, optimizer state sharded over dp; each rank updates "
       "its block, parameters all-gathered after the update",
       1},
      {"zero2",
       "ZeRO-2: as zero1, gradients reduce-scattered instead of all-reduced",
       2},
      {"fsdp",
       "ZeRO-3/FSDP: as zero2, parameters sharded too, all-gathered for "
       "each use in the forward and the backward, prefetched "
       "(--fsdp-prefetch)",
       3},
  };
  return all;
}

const Plugin *findPlugin(StringRef name) {
  for (const Plugin &p : plugins())
    if (p.name == name)
      return &p;
  return nullptr;
}

std::string pluginNames() {
  std::string names;
  for (const Plugin &p : plugins())
    names += (names.empty() ? "" : ", ") + p.name.str();
  return names;
}

void listPlugins(raw_ostream &os) {
  for (const Plugin &p : plugins())
    os << format("%-6s", p.name.str().c_str()) << "  " << p.summary << "\n";
}

std::string checkPluginMesh(
    const Plugin &plugin,
    const std::vector<std::pair<std::string, int64_t>> &mesh) {
  if (llvm::any_of(mesh, [](auto &a) { return a.first == "dp"; }))
    return "";
  std::string sizes;
  for (const auto &[name, size] : mesh)
    sizes += (sizes.empty() ? "" : ",") + name + "=" + std::to_string(size);
  return "--plugin " + plugin.name.str() +
         " splits the batch over the mesh axis 'dp', which the mesh " +
         sizes + " does not have (e.g. --mesh dp=2 or --mesh " + sizes +
         ",dp=2)";
}

} // namespace tessel
