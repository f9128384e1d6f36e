//===- Plugins.cpp - tesselc --plugin: named sets of options --------------===//

#include "BoosterPlugins.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
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
       "ZeRO-3/FSDP: as zero2, parameters sharded too, all-gathered right "
       "before each use in the forward and the backward",
       3},
      {"gemini",
       "Gemini: as fsdp, parameters packed into chunks (--chunk-mb) kept in "
       "device memory up to --device-memory-limit, the rest in host memory "
       "and fetched ahead of use",
       3, /*gemini=*/true},
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

std::optional<int64_t> parseByteSize(StringRef text) {
  StringRef s = text.trim();
  // The unit: the trailing letters; the number: what precedes them.
  size_t digits = s.size();
  while (digits > 0 && isAlpha(s[digits - 1]))
    --digits;
  double value;
  if (digits == 0 || s.take_front(digits).trim().getAsDouble(value))
    return std::nullopt;
  StringRef unit = s.drop_front(digits);
  double scale = StringSwitch<double>(unit)
                     .Cases({"", "B"}, 1)
                     .Case("KiB", 1024.0)
                     .Case("MiB", 1024.0 * 1024)
                     .Case("GiB", 1024.0 * 1024 * 1024)
                     .Case("TiB", 1024.0 * 1024 * 1024 * 1024)
                     .Cases({"kB", "KB"}, 1e3)
                     .Case("MB", 1e6)
                     .Case("GB", 1e9)
                     .Case("TB", 1e12)
                     .Default(0);
  double bytes = value * scale;
  if (scale == 0 || !(bytes >= 0) || bytes >= 9.2e18)
    return std::nullopt;
  return static_cast<int64_t>(bytes);
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
