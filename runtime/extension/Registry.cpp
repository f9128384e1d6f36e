//===- Registry.cpp - The tables plugins and built-ins register into ------===//

#include "tessel/ExtensionHost/Host.h"

#include <algorithm>
#include <map>
#include <set>

namespace tessel::ext::host {
namespace {

struct Tables {
  std::vector<PluginRecord> plugins;
  std::map<std::string, std::pair<CustomOp, std::string>> ops;
  std::map<std::string, std::pair<GradientHandlerDef, std::string>> handlers;
  std::map<std::string, std::pair<ParallelModeDef, std::string>> modes;
  std::map<std::string, std::string> schedules; // name -> plugin
  ScheduleSink scheduleSink;
};

Tables &tables() {
  static Tables *t = new Tables();
  return *t;
}

std::string onnxKey(const OnnxMapping &m) {
  return (m.domain.empty() ? "ai.onnx" : m.domain) + "." + m.opType;
}

template <typename Map>
std::string owner(const Map &m, const std::string &name) {
  auto it = m.find(name);
  return it == m.end() ? "" : it->second.second;
}

/// A registrar acting for one plugin: every failure is kept, naming it.
class HostRegistrar : public Registrar {
public:
  HostRegistrar(std::string plugin, std::string hostName)
      : plugin(std::move(plugin)), hostName(std::move(hostName)) {}

  std::string host() const override { return hostName; }

  bool addOp(CustomOp op) override {
    Tables &t = tables();
    if (op.name.empty())
      return fail("an op without a name");
    if (!op.inferTypes)
      return fail("op '" + op.name + "' has no inferTypes");
    if (auto it = t.ops.find(op.name); it != t.ops.end())
      return fail("op '" + op.name + "' is already registered by plugin '" +
                  it->second.second + "'");
    if (!op.onnx.opType.empty())
      for (const auto &[name, entry] : t.ops)
        if (!entry.first.onnx.opType.empty() &&
            onnxKey(entry.first.onnx) == onnxKey(op.onnx) &&
            entry.first.onnx.since == op.onnx.since)
          return fail("op '" + op.name + "' imports ONNX " +
                      onnxKey(op.onnx) + " (since " +
                      std::to_string(op.onnx.since) +
                      "), which op '" + name + "' of plugin '" +
                      entry.second + "' already imports");
    std::string name = op.name;
    t.ops.emplace(name, std::make_pair(std::move(op), plugin));
    return true;
  }

  bool addSchedule(ScheduleDef s) override {
    Tables &t = tables();
    if (s.name.empty())
      return fail("a schedule without a name");
    if (!s.generate)
      return fail("schedule '" + s.name + "' has no generator");
    if (auto it = t.schedules.find(s.name); it != t.schedules.end())
      return fail("schedule '" + s.name + "' is already registered by plugin '" +
                  it->second + "'");
    if (t.scheduleSink)
      if (std::string err = t.scheduleSink(s, plugin); !err.empty())
        return fail(err);
    t.schedules[s.name] = plugin;
    return true;
  }

  bool addGradientHandler(GradientHandlerDef h) override {
    Tables &t = tables();
    if (h.name.empty())
      return fail("a gradient handler without a name");
    if (!h.handle)
      return fail("gradient handler '" + h.name + "' has no handle function");
    if (auto it = t.handlers.find(h.name); it != t.handlers.end())
      return fail("gradient handler '" + h.name +
                  "' is already registered by plugin '" + it->second.second +
                  "'");
    std::string name = h.name;
    t.handlers.emplace(name, std::make_pair(std::move(h), plugin));
    return true;
  }

  bool addParallelMode(ParallelModeDef m) override {
    Tables &t = tables();
    if (m.name.empty())
      return fail("a parallel mode without a name");
    if (!m.split)
      return fail("parallel mode '" + m.name + "' has no split function");
    if (auto it = t.modes.find(m.name); it != t.modes.end())
      return fail("parallel mode '" + m.name +
                  "' is already registered by plugin '" + it->second.second +
                  "'");
    std::string name = m.name;
    t.modes.emplace(name, std::make_pair(std::move(m), plugin));
    return true;
  }

  /// The failures, one per line; "" when none.
  std::string errors() const { return joined; }

private:
  bool fail(const std::string &message) {
    joined += (joined.empty() ? "" : "\n") + ("plugin '" + plugin + "': " +
                                               message);
    return false;
  }

  std::string plugin, hostName, joined;
};

} // namespace

const std::vector<PluginRecord> &loadedPlugins() { return tables().plugins; }

std::string registerPlugin(const PluginRecord &record,
                           void (*registerAll)(Registrar &),
                           const std::string &hostName) {
  for (const PluginRecord &p : tables().plugins)
    if (p.name == record.name)
      return "plugin '" + record.name + "' (" + record.path +
             ") is already loaded" +
             (p.path.empty() ? std::string() : " from " + p.path);
  HostRegistrar r(record.name, hostName);
  registerAll(r);
  if (!r.errors().empty())
    return r.errors();
  tables().plugins.push_back(record);
  return "";
}

std::string registerBuiltins(void (*registerAll)(Registrar &),
                             const std::string &hostName) {
  for (const PluginRecord &p : tables().plugins)
    if (p.name == "tessel")
      return "";
  return registerPlugin({"tessel", "builtin", ""}, registerAll, hostName);
}

void setScheduleSink(ScheduleSink sink) {
  tables().scheduleSink = std::move(sink);
}

const CustomOp *findOp(const std::string &name) {
  auto it = tables().ops.find(name);
  return it == tables().ops.end() ? nullptr : &it->second.first;
}

std::string pluginOfOp(const std::string &name) {
  return owner(tables().ops, name);
}

const CustomOp *findOnnxOp(const std::string &domain, const std::string &opType,
                           int64_t version, int *oldest) {
  const std::string key =
      (domain.empty() ? std::string("ai.onnx") : domain) + "." + opType;
  const CustomOp *best = nullptr;
  int first = 0;
  for (const auto &[name, entry] : tables().ops) {
    const CustomOp &op = entry.first;
    if (op.onnx.opType.empty() || onnxKey(op.onnx) != key)
      continue;
    if (!first || op.onnx.since < first)
      first = op.onnx.since;
    if (op.onnx.since <= version && (!best || op.onnx.since > best->onnx.since))
      best = &op;
  }
  if (oldest)
    *oldest = best ? 0 : first;
  return best;
}

const GradientHandlerDef *findGradientHandler(const std::string &name) {
  auto it = tables().handlers.find(name);
  return it == tables().handlers.end() ? nullptr : &it->second.first;
}

std::string pluginOfGradientHandler(const std::string &name) {
  return owner(tables().handlers, name);
}

std::vector<std::string> gradientHandlerNames() {
  std::vector<std::string> names;
  for (const auto &[name, entry] : tables().handlers)
    names.push_back(name);
  return names;
}

const ParallelModeDef *findParallelMode(const std::string &name) {
  auto it = tables().modes.find(name);
  return it == tables().modes.end() ? nullptr : &it->second.first;
}

std::string pluginOfParallelMode(const std::string &name) {
  return owner(tables().modes, name);
}

} // namespace tessel::ext::host
