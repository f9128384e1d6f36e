//===- CustomOp.cpp - custom_call instructions and their plugins ----------===//

#include "tessel/runtime/CustomOp.h"

#include "tessel/ExtensionHost/Host.h"

#include "artifact.pb.h"

namespace tessel::runtime {

ext::KernelInstance customKernelInstance(const std::vector<BufferInfo> &buffers,
                                         const Op &op) {
  ext::KernelInstance inst;
  auto typeOf = [&](int id) {
    const BufferInfo &b = buffers[id];
    return ext::TensorType{dtypeName(b.dtype), b.shape};
  };
  for (int id : op.operands)
    inst.operands.push_back(typeOf(id));
  for (int id : op.results)
    inst.results.push_back(typeOf(id));
  for (const auto &[name, a] : op.attrs) {
    if (name == "target")
      continue;
    ext::AttrValue v;
    switch (a.kind) {
    case AttrValue::Kind::Ints:
      v = ext::AttrValue::ofInts(a.ints);
      break;
    case AttrValue::Kind::Floats:
      v.kind = ext::AttrValue::Kind::Floats;
      v.floats.assign(a.floats.begin(), a.floats.end());
      break;
    case AttrValue::Kind::Str:
      v = ext::AttrValue::ofStr(a.str);
      break;
    }
    inst.attrs[name] = v;
  }
  return inst;
}

Status buildCustomKernel(const std::vector<BufferInfo> &buffers, const Op &op,
                         ext::CpuKernelFn &run) {
  auto t = op.attrs.find("target");
  if (t == op.attrs.end() || t->second.kind != AttrValue::Kind::Str)
    return Status::error("custom_call has no string attribute 'target'");
  const std::string &target = t->second.str;
  const ext::CustomOp *def = ext::host::findOp(target);
  if (!def)
    return Status::error("custom op '" + target +
                         "' is not registered: load the plugin that defines "
                         "it (--load-plugin lib.so)");
  if (!def->cpuKernel)
    return Status::error("custom op '" + target + "' of plugin '" +
                         ext::host::pluginOfOp(target) + "' has no CPU kernel");
  if (std::string why = def->cpuKernel(customKernelInstance(buffers, op), run);
      !why.empty())
    return Status::error("custom op '" + target + "': " + why);
  if (!run)
    return Status::error("custom op '" + target +
                         "': its kernel builder "
                         "gave no kernel");
  return Status::ok();
}

Status checkRequiredPlugins(const artifact::Manifest &manifest) {
  for (const artifact::PluginRef &need : manifest.plugins()) {
    const ext::host::PluginRecord *have = nullptr;
    for (const ext::host::PluginRecord &p : ext::host::loadedPlugins())
      if (p.name == need.name())
        have = &p;
    if (!have)
      return Status::error("the artifact needs plugin '" + need.name() +
                           "' (version " + need.version() +
                           "): load it with --load-plugin lib.so");
    if (have->version != need.version())
      return Status::error("the artifact needs plugin '" + need.name() +
                           "' version " + need.version() + ", but " +
                           have->path + " is version " + have->version);
  }
  return Status::ok();
}

} // namespace tessel::runtime
