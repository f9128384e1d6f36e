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

/// The plugin of a table's entry: a definition with its plugin, or the
/// plugin alone (schedules).
const std::string &pluginOf(const std::string &plugin) { return plugin; }
template <typename Def>
const std::string &pluginOf(const std::pair<Def, std::string> &entry) {
  return entry.second;
}

template <typename Map>
std::string owner(const Map &m, const std::string &name) {
  auto it = m.find(name);
  return it == m.end() ? "" : pluginOf(it->second);
}

bool isVowel(char c) { return std::string("aeiou").find(c) != std::string::npos; }

/// The definition registered as `name`, or null.
template <typename Def>
const Def *
findIn(const std::map<std::string, std::pair<Def, std::string>> &m,
       const std::string &name) {
  auto it = m.find(name);
  return it == m.end() ? nullptr : &it->second.first;
}

/// A registrar acting for one plugin: every failure is kept, naming it.
class HostRegistrar : public Registrar {
public:
  HostRegistrar(std::string plugin, std::string hostName)
      : plugin(std::move(plugin)), hostName(std::move(hostName)) {}

  std::string host() const override { return hostName; }

  bool addOp(CustomOp op) override {
    Tables &t = tables();
    if (!admits(t.ops, "op", op, &CustomOp::inferTypes, "inferTypes"))
      return false;
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
    return insert(t.ops, std::move(op));
  }

  bool addSchedule(ScheduleDef s) override {
    Tables &t = tables();
    if (!admits(t.schedules, "schedule", s, &ScheduleDef::generate,
                "generator"))
      return false;
    if (t.scheduleSink)
      if (std::string err = t.scheduleSink(s, plugin); !err.empty())
        return fail(err);
    t.schedules[s.name] = plugin;
    return true;
  }

  bool addGradientHandler(GradientHandlerDef h) override {
    return add(tables().handlers, "gradient handler", std::move(h),
               &GradientHandlerDef::handle, "handle function");
  }

  bool addParallelMode(ParallelModeDef m) override {
    return add(tables().modes, "parallel mode", std::move(m),
               &ParallelModeDef::split, "split function");
  }

  /// The failures, one per line; "" when none.
  std::string errors() const { return joined; }

private:
  /// Whether `def`, a `what` (an op, a schedule...), may be added to
  /// `table`: it has a name, its required `function` (the member
  /// `required`), and no plugin took the name before. Fails naming what is
  /// wrong otherwise.
  template <typename Map, typename Def, typename Function>
  bool admits(const Map &table, const std::string &what, const Def &def,
              Function Def::*required, const char *function) {
    if (def.name.empty())
      return fail(std::string(isVowel(what[0]) ? "an " : "a ") + what +
                  " without a name");
    if (!(def.*required))
      return fail(what + " '" + def.name + "' has no " + function);
    if (auto it = table.find(def.name); it != table.end())
      return fail(what + " '" + def.name +
                  "' is already registered by plugin '" +
                  pluginOf(it->second) + "'");
    return true;
  }
  /// Adds `def` under its name, as this plugin's.
  template <typename Def>
  bool insert(std::map<std::string, std::pair<Def, std::string>> &table,
              Def def) {
    std::string name = def.name;
    table.emplace(name, std::make_pair(std::move(def), plugin));
    return true;
  }
  /// admits, then insert.
  template <typename Def, typename Function>
  bool add(std::map<std::string, std::pair<Def, std::string>> &table,
           const std::string &what, Def def, Function Def::*required,
           const char *function) {
    return admits(table, what, def, required, function) &&
           insert(table, std::move(def));
  }

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
  return findIn(tables().ops, name);
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
  return findIn(tables().handlers, name);
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
  return findIn(tables().modes, name);
}

std::string pluginOfParallelMode(const std::string &name) {
  return owner(tables().modes, name);
}

} // namespace tessel::ext::host
