//===- OnnxPlan.cpp - ONNX's sharding annotations as a plan ---------------===//

#include "OnnxPlan.h"

#include "dialects/tessel/PipelineAttrs.h"
#include "dialects/tessel/TesselDialect.h"
#include "dialects/tessel/TesselOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/GlobPattern.h"

#include <algorithm>
#include <functional>

using namespace llvm;
using mlir::tessel::OnnxNodeSharding;
using mlir::tessel::OnnxShardingAnnotations;
using mlir::tessel::OnnxShardingSpec;
using mlir::tessel::Plan;
using mlir::tessel::PlanRule;
using mlir::tessel::PlanSplit;

namespace tessel::driver {

namespace {

/// A mesh's ranks, numbered with the first axis major (as the exporter
/// numbers them), and which ranks hold each shard of a split.
struct MeshGeometry {
  explicit MeshGeometry(const Mesh &mesh) : mesh(mesh) {
    for (auto [i, axis] : llvm::enumerate(mesh)) {
      ranks *= axis.second;
      if (axis.first == mlir::tessel::kPipelineAxis && axis.second > 1)
        ppIndex = int(i);
    }
  }
  std::vector<int64_t> coords(int64_t rank) const {
    std::vector<int64_t> c(mesh.size());
    for (int64_t i = int64_t(mesh.size()) - 1; i >= 0; --i) {
      c[i] = rank % mesh[i].second;
      rank /= mesh[i].second;
    }
    return c;
  }
  /// The ranks holding each shard when dim j is split over the axes
  /// `axes[j]` (major to minor), shards in row-major order over the dims;
  /// with a pipeline axis, only the ranks of stage `ppCoord`.
  std::vector<std::vector<int64_t>>
  layout(const std::vector<std::vector<int>> &axes, int64_t ppCoord) const {
    int64_t shards = 1;
    for (const auto &dimAxes : axes)
      for (int a : dimAxes)
        shards *= mesh[a].second;
    std::vector<std::vector<int64_t>> sets(shards);
    for (int64_t r = 0; r < ranks; ++r) {
      std::vector<int64_t> c = coords(r);
      if (ppIndex >= 0 && c[ppIndex] != ppCoord)
        continue;
      int64_t index = 0;
      for (const auto &dimAxes : axes)
        for (int a : dimAxes)
          index = index * mesh[a].second + c[a];
      sets[index].push_back(r);
    }
    return sets;
  }
  std::string describe() const {
    std::string s;
    for (const auto &[name, size] : mesh)
      s += (s.empty() ? "" : ",") + name + "=" + std::to_string(size);
    return s;
  }

  const Mesh &mesh;
  int64_t ranks = 1;
  int ppIndex = -1;
};

std::string describeShards(const OnnxShardingSpec &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.devices.size(); ++i) {
    std::vector<int64_t> d = s.getShardDevices(i);
    out += i ? ", " : "";
    if (d.size() == 1) {
      out += std::to_string(d[0]);
      continue;
    }
    out += "{";
    for (size_t k = 0; k < d.size(); ++k)
      out += (k ? "," : "") + std::to_string(d[k]);
    out += "}";
  }
  return out + "]";
}

/// The axes (mesh indices, per split dim) that lay `spec` out on its
/// devices, or none.
std::optional<std::vector<std::vector<int>>>
matchAxes(const MeshGeometry &g, const OnnxShardingSpec &spec,
          int64_t ppCoord) {
  std::vector<std::vector<int64_t>> want(spec.devices.size());
  for (size_t i = 0; i < want.size(); ++i) {
    want[i] = spec.getShardDevices(i);
    llvm::sort(want[i]);
  }
  std::vector<std::vector<int>> axes(spec.dims.size());
  std::vector<bool> used(g.mesh.size(), false);
  // Depth-first: dim j gets axes whose sizes multiply to its shard count.
  std::function<bool(size_t, int64_t)> assign = [&](size_t j,
                                                    int64_t left) -> bool {
    if (j == spec.dims.size())
      return g.layout(axes, ppCoord) == want;
    if (left == 1)
      return assign(j + 1, j + 1 < spec.dims.size()
                               ? spec.dims[j + 1].numShards
                               : 1);
    for (size_t a = 0; a < g.mesh.size(); ++a) {
      int64_t size = g.mesh[a].second;
      if (used[a] || int(a) == g.ppIndex || size == 1 || left % size)
        continue;
      used[a] = true;
      axes[j].push_back(int(a));
      if (assign(j, left / size))
        return true;
      axes[j].pop_back();
      used[a] = false;
    }
    return false;
  };
  if (assign(0, spec.dims.empty() ? 1 : spec.dims[0].numShards))
    return axes;
  return std::nullopt;
}

} // namespace

Expected<Plan>
planFromOnnxAnnotations(const OnnxShardingAnnotations &a, StringRef modelName,
                        const std::optional<Mesh> &given, raw_ostream &chosen) {
  auto fail = [&](const Twine &msg) {
    return createStringError(modelName + ": " + msg);
  };
  if (a.configurations.empty())
    return fail("--plan=onnx reads the model's ONNX sharding annotations "
                "(ModelProto.configuration and NodeProto."
                "device_configurations, onnx >= 1.16), and it has none");
  Plan plan;
  std::string meshFrom;
  if (given) {
    plan.mesh = *given;
    meshFrom = "--mesh";
  } else if (!a.mesh.empty()) {
    auto parsed = mlir::tessel::parseMeshSpec(a.mesh);
    if (!parsed)
      return fail("its tessel.mesh metadata '" + a.mesh +
                  "': " + toString(parsed.takeError()));
    plan.mesh = std::move(*parsed);
    meshFrom = "the model's tessel.mesh";
  } else {
    plan.mesh = {{"tp", a.configurations.front().numDevices}};
    meshFrom = "no --mesh and no tessel.mesh metadata: one axis";
  }
  MeshGeometry g(plan.mesh);
  auto config = llvm::find_if(a.configurations, [&](const auto &c) {
    return c.numDevices == g.ranks;
  });
  if (config == a.configurations.end()) {
    std::string have;
    for (const auto &c : a.configurations)
      have += (have.empty() ? "" : ", ") + ("'" + c.name + "' (" +
                                            std::to_string(c.numDevices) +
                                            " devices)");
    return fail("no device configuration of the model has the " +
                Twine(g.ranks) + " ranks of the mesh " + g.describe() +
                " (" + meshFrom + "); it has " + have);
  }
  chosen << "onnx: configuration '" << config->name << "' on the mesh "
         << g.describe() << " (" << meshFrom << ")\n";

  StringSet<> initializers, inputs;
  for (const std::string &n : a.initializers)
    initializers.insert(n);
  for (const std::string &n : a.inputs)
    if (!initializers.contains(n))
      inputs.insert(n);
  // Tensor -> its rule's index, so that two nodes agree on a shared one.
  StringMap<size_t> ruleOf;
  int64_t activations = 0;
  for (const OnnxNodeSharding &n : a.nodes) {
    if (n.configuration != config->name)
      continue;
    const std::string node = n.node.empty()
                                 ? "node #" + std::to_string(n.nodeIndex)
                                 : "node '" + n.node + "'";
    int64_t ppCoord = std::max<int64_t>(n.stage, 0);
    if (n.stage >= 0) {
      if (g.ppIndex < 0 && n.stage > 0)
        return fail(node + " has pipeline_stage " + Twine(n.stage) +
                    ", and the mesh " + g.describe() + " has no pp axis");
      if (g.ppIndex >= 0 && n.stage >= g.mesh[g.ppIndex].second)
        return fail(node + " has pipeline_stage " + Twine(n.stage) +
                    "; the mesh " + g.describe() + " has " +
                    Twine(g.mesh[g.ppIndex].second) + " stages");
      if (n.node.empty())
        return fail(node + " has a pipeline_stage but no name for a stage "
                           "rule to match");
      if (g.ppIndex >= 0) {
        PlanRule stage;
        stage.target = PlanRule::Target::Node;
        stage.pattern = mlir::tessel::literalGlob(n.node);
        stage.stage = n.stage;
        stage.where = modelName.str() + ": " + node;
        plan.stageRules.push_back(std::move(stage));
      }
    }
    for (const OnnxShardingSpec &s : n.specs) {
      const std::string at = node + ", tensor '" + s.tensor + "'";
      bool isWeight = initializers.contains(s.tensor);
      if (!isWeight && !inputs.contains(s.tensor)) {
        ++activations;
        continue;
      }
      if (g.ppIndex >= 0) {
        // Every device of the spec in one stage: the node's, if it says.
        std::optional<int64_t> stageOf;
        for (size_t i = 0; i < s.devices.size(); ++i)
          for (int64_t d : s.getShardDevices(i)) {
            if (d >= g.ranks)
              return fail(at + ": device " + Twine(d) + " is not a rank of "
                               "the mesh " + g.describe());
            int64_t c = g.coords(d)[g.ppIndex];
            if (stageOf && *stageOf != c)
              return fail(at + ": its devices " + describeShards(s) +
                          " lie in more than one pipeline stage of the "
                          "mesh " + g.describe());
            stageOf = c;
          }
        if (stageOf && n.stage >= 0 && *stageOf != n.stage)
          return fail(at + ": its devices lie in stage " + Twine(*stageOf) +
                      " of the mesh " + g.describe() +
                      ", the node's pipeline_stage is " + Twine(n.stage));
        if (stageOf)
          ppCoord = *stageOf;
      }
      auto axes = matchAxes(g, s, ppCoord);
      if (!axes)
        return fail(at + ": its shards lie on devices " + describeShards(s) +
                    ", which no axes of the mesh " + g.describe() +
                    " give (ranks are numbered with the first axis "
                    "major); give the --mesh it was annotated for");
      PlanRule rule;
      rule.target = isWeight ? PlanRule::Target::Weight
                             : PlanRule::Target::Input;
      rule.pattern = mlir::tessel::literalGlob(s.tensor);
      rule.where = modelName.str() + ": " + node;
      for (auto [dim, dimAxes] : llvm::zip(s.dims, *axes)) {
        if (dimAxes.empty())
          continue;
        PlanSplit split;
        split.dim = dim.axis;
        for (int ax : dimAxes)
          split.axes.push_back(g.mesh[ax].first);
        // ONNX divides N blocks into M shards, evenly or not.
        split.autoPad = true;
        rule.splits.push_back(std::move(split));
      }
      if (auto it = ruleOf.find(s.tensor); it != ruleOf.end()) {
        const PlanRule &first = plan.rules[it->second];
        bool same = first.splits.size() == rule.splits.size() &&
                    llvm::all_of(llvm::zip(first.splits, rule.splits),
                                 [](auto p) {
                                   return std::get<0>(p).dim ==
                                              std::get<1>(p).dim &&
                                          std::get<0>(p).axes ==
                                              std::get<1>(p).axes;
                                 });
        if (!same)
          return fail(at + " is sharded otherwise than at " + first.where +
                      "; Tessel gives a weight or input one spec");
        continue;
      }
      ruleOf[s.tensor] = plan.rules.size();
      plan.rules.push_back(std::move(rule));
    }
  }
  chosen << "onnx: " << plan.rules.size() << " weight and input specs, "
         << plan.stageRules.size() << " node stages";
  if (activations)
    chosen << "; " << activations
           << " specs of computed tensors left to propagation";
  chosen << "\n";
  return plan;
}

OnnxShardingAnnotations
annotationsFromModule(mlir::ModuleOp module, const Mesh &mesh,
                      const std::vector<PlanRule> &stageRules,
                      const OnnxShardingAnnotations &model) {
  using mlir::tessel::TensorShardingAttr;
  using mlir::tessel::TesselDialect;
  MeshGeometry g(mesh);
  OnnxShardingAnnotations out;
  out.configurations.push_back({"tessel", g.ranks});
  out.mesh = g.describe();
  // The specs of weights and graph inputs, by name.
  StringMap<TensorShardingAttr> specs;
  const StringRef attr = TesselDialect::kShardingAttrName;
  for (auto fn : module.getOps<mlir::func::FuncOp>()) {
    auto names =
        fn->getAttrOfType<mlir::ArrayAttr>(TesselDialect::kInputNamesAttrName);
    for (unsigned i = 0; names && i < fn.getNumArguments() && i < names.size();
         ++i)
      if (auto spec = fn.getArgAttrOfType<TensorShardingAttr>(i, attr))
        specs[cast<mlir::StringAttr>(names[i]).getValue()] = spec;
    fn.walk([&](mlir::tessel::WeightOp w) {
      if (auto spec = w->getAttrOfType<TensorShardingAttr>(attr))
        specs[w.getName()] = spec;
    });
  }
  std::vector<GlobPattern> stageGlobs;
  for (const PlanRule &r : stageRules)
    if (auto glob = GlobPattern::create(r.pattern))
      stageGlobs.push_back(std::move(*glob));
  int index = 0;
  for (const auto &[name, inputs] : model.graph) {
    OnnxNodeSharding n;
    n.node = name;
    n.nodeIndex = index++;
    n.configuration = "tessel";
    for (size_t i = 0; i < stageGlobs.size() && !name.empty(); ++i)
      if (stageGlobs[i].match(name)) {
        n.stage = stageRules[i].stage;
        break;
      }
    StringSet<> done;
    for (const std::string &input : inputs) {
      auto it = specs.find(input);
      if (it == specs.end() || !done.insert(input).second)
        continue;
      OnnxShardingSpec s;
      s.tensor = input;
      std::vector<std::vector<int>> axes;
      for (auto [d, dim] : llvm::enumerate(it->second.getDims())) {
        std::vector<int> dimAxes;
        int64_t shards = 1;
        for (mlir::StringAttr axis : dim.getAxes()) {
          auto at = llvm::find_if(
              mesh, [&](const auto &m) { return m.first == axis.getValue(); });
          if (at == mesh.end() || at->second == 1 ||
              int(at - mesh.begin()) == g.ppIndex)
            continue;
          dimAxes.push_back(int(at - mesh.begin()));
          shards *= at->second;
        }
        if (dimAxes.empty())
          continue;
        s.dims.push_back({int64_t(d), shards});
        axes.push_back(std::move(dimAxes));
      }
      if (axes.empty())
        continue;
      int64_t key = -1;
      for (std::vector<int64_t> &set :
           g.layout(axes, std::max<int64_t>(n.stage, 0))) {
        if (set.size() == 1) {
          s.devices.push_back(set[0]);
          continue;
        }
        s.groups[key] = std::move(set);
        s.devices.push_back(key--);
      }
      n.specs.push_back(std::move(s));
    }
    if (!name.empty() && (!n.specs.empty() || n.stage >= 0))
      out.nodes.push_back(std::move(n));
  }
  return out;
}

} // namespace tessel::driver
