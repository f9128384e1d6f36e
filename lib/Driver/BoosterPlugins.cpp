//===- BoosterPlugins.cpp - --plugin: named sets of options ---------------===//

#include "tessel/Driver/BoosterPlugins.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
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
       "ZeRO-3/FSDP: as zero2, parameters sharded too, all-gathered for "
       "each use in the forward and the backward, prefetched "
       "(--fsdp-prefetch)",
       3},
      {"gemini",
       "Gemini: as fsdp, parameters packed into chunks (--chunk-mb) kept in "
       "device memory up to --device-memory-limit, the rest in host memory "
       "and fetched ahead of use",
       3, /*gemini=*/true},
      {"hybrid",
       "hybrid:tp=T,pp=P,dp=D,zero=0|1|2|3,microbatches=M,schedule=S,"
       "chunks=V,precision=fp32|bf16|fp16 (HybridParallelPlugin): the mesh "
       "dp x tp x pp, Megatron's tp (--plan=megatron unless --plan), "
       "pipeline stages (the plan's or --stages auto), ZeRO over dp within "
       "each stage",
       0},
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

Expected<HybridOptions> parseHybridOptions(StringRef options) {
  HybridOptions h;
  if (options.empty())
    return h;
  const std::string whole = "--plugin hybrid" + options.str();
  auto error = [&](const Twine &message) {
    return createStringError(inconvertibleErrorCode(),
                             whole + ": " + message);
  };
  if (!options.consume_front(":"))
    return error("options follow a colon: hybrid:tp=2,pp=2,zero=1");
  SmallVector<StringRef> items;
  options.split(items, ',');
  for (StringRef item : items) {
    auto [key, value] = item.split('=');
    key = key.trim();
    value = value.trim();
    if (!item.contains('=') || value.empty())
      return error("'" + item + "' is not KEY=VALUE");
    if (key == "schedule") {
      h.schedule = value.str();
      continue;
    }
    if (key == "precision") {
      if (value != "fp32" && value != "bf16" && value != "fp16")
        return error("precision=" + value + " is none of fp32, bf16, fp16");
      h.precision = value.str();
      continue;
    }
    int64_t *slot = StringSwitch<int64_t *>(key)
                        .Case("dp", &h.dp)
                        .Case("tp", &h.tp)
                        .Case("pp", &h.pp)
                        .Case("zero", &h.zero)
                        .Case("microbatches", &h.microbatches)
                        .Case("chunks", &h.chunks)
                        .Default(nullptr);
    if (!slot)
      return error("unknown option '" + key +
                   "' (known: dp, tp, pp, zero, microbatches, schedule, "
                   "chunks, precision)");
    int64_t n = 0;
    if (value.getAsInteger(10, n))
      return error(key + "=" + value + " is not a whole number");
    if (key == "zero" ? (n < 0 || n > 3) : n < 1)
      return error(key + "=" + value + (key == "zero"
                                            ? " is not a ZeRO stage (0, 1, 2 "
                                              "or 3)"
                                            : " must be at least 1"));
    *slot = n;
  }
  return h;
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
