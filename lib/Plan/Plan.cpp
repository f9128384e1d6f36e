//===- Plan.cpp - sharding plans: name patterns -> specs ------------------===//

#include "tessel/Plan/Plan.h"
#include "tessel/Support/YamlGuard.h"

#include "tessel/ExtensionHost/Host.h"

#include "dialects/tessel/TesselDialect.h"
#include "dialects/tessel/TesselOps.h"
#include "dialects/tessel/Verifiers.h"
#include "tessel/support/Checked.h"
#include "tessel/support/JsonNesting.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"

using namespace mlir;
using namespace mlir::tessel;
using llvm::createStringError;
using llvm::Error;
using llvm::Expected;

static Expected<std::vector<std::pair<std::string, int64_t>>>
expandParallelMode(StringRef name, int64_t size, StringRef mode);

/// "a=2, b=4" for messages.
static std::string meshText(
    const std::vector<std::pair<std::string, int64_t>> &mesh) {
  std::string s;
  for (const auto &[n, size] : mesh)
    s += (s.empty() ? "" : ", ") + n + "=" + std::to_string(size);
  return s;
}

/// A mesh has at most kMaxMeshDevices (2^31) devices, the product of its
/// axis sizes computed with checked arithmetic: two axes of 2^32 once gave
/// a product of 0 that specFor divided by (SIGFPE).
static Error checkMeshDevices(
    const std::vector<std::pair<std::string, int64_t>> &mesh,
    const Twine &where) {
  SmallVector<int64_t> sizes;
  for (const auto &axis : mesh)
    sizes.push_back(axis.second);
  if (checkedShardCount(sizes))
    return Error::success();
  std::optional<int64_t> n = ::tessel::checkedProduct(sizes);
  return createStringError(
      llvm::inconvertibleErrorCode(),
      where + "the mesh " + meshText(mesh) + " has " +
          (n ? Twine(*n) : Twine("more than 2^63")) +
          " devices; a mesh may have at most " + Twine(kMaxMeshDevices));
}

namespace {

/// Reads YAML nodes into a Plan, keeping the first error with its line.
class PlanReader {
public:
  PlanReader(llvm::SourceMgr &sm, StringRef name) : sm(sm), name(name) {}

  Expected<Plan> read(llvm::yaml::Document &doc) {
    auto *root = dyn_cast_or_null<llvm::yaml::MappingNode>(doc.getRoot());
    if (!root)
      return fail(doc.getRoot(), "a plan is a mapping with 'rules' (and "
                                 "optionally 'mesh')");
    Plan plan;
    for (auto &kv : *root) {
      std::string key = scalar(kv.getKey());
      if (key == "mesh") {
        auto *m = dyn_cast_or_null<llvm::yaml::MappingNode>(kv.getValue());
        if (!m)
          return fail(kv.getValue(), "'mesh' must map axis names to sizes");
        for (auto &axis : *m) {
          int64_t size;
          // SIZE, or SIZE:MODE for an axis of a parallel mode.
          std::string value = scalar(axis.getValue());
          auto [sizeText, mode] = StringRef(value).split(':');
          if (sizeText.getAsInteger(10, size) || size < 1)
            return fail(axis.getValue(), "mesh axis '" + scalar(axis.getKey()) +
                                             "' needs a positive size");
          if (mode.empty()) {
            plan.mesh.emplace_back(scalar(axis.getKey()), size);
            continue;
          }
          auto sub = expandParallelMode(scalar(axis.getKey()), size, mode);
          if (!sub)
            return fail(axis.getValue(), toString(sub.takeError()));
          plan.mesh.insert(plan.mesh.end(), sub->begin(), sub->end());
        }
        if (Error e = checkMeshDevices(plan.mesh, where(m) + ": "))
          return std::move(e);
      } else if (key == "rules") {
        auto *seq = dyn_cast_or_null<llvm::yaml::SequenceNode>(kv.getValue());
        if (!seq)
          return fail(kv.getValue(), "'rules' must be a list");
        for (auto &r : *seq) {
          Expected<PlanRule> rule = readRule(&r);
          if (!rule)
            return rule.takeError();
          if (rule->stage >= 0)
            plan.stageRules.push_back(std::move(*rule));
          else
            plan.rules.push_back(std::move(*rule));
        }
      } else {
        return fail(kv.getKey(), "unknown key '" + key +
                                     "' (expected 'mesh' or 'rules')");
      }
    }
    return plan;
  }

private:
  std::string where(llvm::yaml::Node *n) {
    // A node the scanner made up at a cut-off stream may point nowhere.
    llvm::SMLoc loc = n ? n->getSourceRange().Start : llvm::SMLoc();
    if (!loc.isValid() || !sm.FindBufferContainingLoc(loc))
      return name.str();
    unsigned line = sm.getLineAndColumn(loc).first;
    return (name + ":" + Twine(line)).str();
  }
  Error fail(llvm::yaml::Node *n, const Twine &msg) {
    return createStringError(llvm::inconvertibleErrorCode(),
                             where(n) + ": " + msg);
  }
  static std::string scalar(llvm::yaml::Node *n) {
    auto *s = dyn_cast_or_null<llvm::yaml::ScalarNode>(n);
    if (!s)
      return "";
    SmallString<32> storage;
    return s->getValue(storage).str();
  }

  Expected<PlanSplit> readSplit(llvm::yaml::Node *n) {
    auto *m = dyn_cast_or_null<llvm::yaml::MappingNode>(n);
    if (!m)
      return fail(n, "a split is {dim: D, axes: [AXIS, ...], pad: N|auto}");
    std::optional<int64_t> dim;
    std::vector<std::string> axes;
    PlanSplit split;
    for (auto &kv : *m) {
      std::string key = scalar(kv.getKey());
      if (key == "dim") {
        int64_t d;
        if (StringRef(scalar(kv.getValue())).getAsInteger(10, d))
          return fail(kv.getValue(), "'dim' must be an integer");
        dim = d;
      } else if (key == "axes") {
        if (auto *seq =
                dyn_cast_or_null<llvm::yaml::SequenceNode>(kv.getValue())) {
          for (auto &a : *seq)
            axes.push_back(scalar(&a));
        } else {
          axes.push_back(scalar(kv.getValue()));
        }
      } else if (key == "pad") {
        std::string v = scalar(kv.getValue());
        if (v == "auto")
          split.autoPad = true;
        else if (StringRef(v).getAsInteger(10, split.pad) || split.pad < 0)
          return fail(kv.getValue(),
                      "'pad' must be a non-negative integer or 'auto'");
      } else {
        return fail(kv.getKey(), "unknown key '" + key +
                                     "' in a split (expected 'dim', 'axes', "
                                     "'pad')");
      }
    }
    if (!dim || axes.empty())
      return fail(n, "a split needs 'dim' and 'axes'");
    split.dim = *dim;
    split.axes = std::move(axes);
    return split;
  }

  Expected<PlanRule> readRule(llvm::yaml::Node *n) {
    auto *m = dyn_cast_or_null<llvm::yaml::MappingNode>(n);
    if (!m)
      return fail(n, "a rule is a mapping: {weight|node|input: PATTERN, "
                     "split: ...}");
    PlanRule rule;
    rule.where = where(n);
    bool hasTarget = false, hasSpec = false;
    for (auto &kv : *m) {
      std::string key = scalar(kv.getKey());
      if (key == "weight" || key == "node" || key == "input") {
        if (hasTarget)
          return fail(kv.getKey(), "a rule names one of weight, node, input");
        hasTarget = true;
        rule.target = key == "weight" ? PlanRule::Target::Weight
                      : key == "node" ? PlanRule::Target::Node
                                      : PlanRule::Target::Input;
        rule.pattern = scalar(kv.getValue());
      } else if (key == "operand") {
        if (StringRef(scalar(kv.getValue())).getAsInteger(10, rule.operand) ||
            rule.operand < 0)
          return fail(kv.getValue(), "'operand' must be a non-negative integer");
      } else if (key == "split") {
        hasSpec = true;
        if (auto *seq =
                dyn_cast_or_null<llvm::yaml::SequenceNode>(kv.getValue())) {
          for (auto &s : *seq) {
            auto split = readSplit(&s);
            if (!split)
              return split.takeError();
            rule.splits.push_back(std::move(*split));
          }
        } else {
          auto split = readSplit(kv.getValue());
          if (!split)
            return split.takeError();
          rule.splits.push_back(std::move(*split));
        }
      } else if (key == "replicate") {
        hasSpec = true;
      } else if (key == "stage") {
        if (StringRef(scalar(kv.getValue())).getAsInteger(10, rule.stage) ||
            rule.stage < 0)
          return fail(kv.getValue(), "'stage' must be a non-negative integer");
      } else {
        return fail(kv.getKey(), "unknown key '" + key +
                                     "' in a rule (expected weight, node, "
                                     "input, operand, split, replicate, "
                                     "stage)");
      }
    }
    if (!hasTarget || rule.pattern.empty())
      return fail(n, "a rule needs a 'weight', 'node' or 'input' pattern");
    if (rule.stage >= 0) {
      if (hasSpec || rule.target != PlanRule::Target::Node)
        return fail(n, "a stage rule is a 'node' pattern and a 'stage', "
                       "without 'split' or 'replicate'");
      return rule;
    }
    if (!hasSpec)
      return fail(n, "a rule needs 'split', 'replicate: true' or 'stage'");
    return rule;
  }

  llvm::SourceMgr &sm;
  StringRef name;
};

} // namespace

Expected<Plan> mlir::tessel::parsePlan(StringRef text, StringRef name) {
  llvm::SourceMgr sm;
  std::string diag;
  sm.setDiagHandler(
      [](const llvm::SMDiagnostic &d, void *ctx) {
        auto *out = static_cast<std::string *>(ctx);
        if (out->empty())
          *out = (Twine(d.getLineNo()) + ": " + d.getMessage()).str();
      },
      &diag);
  // A plan nests 6 deep (rules, a rule, its splits, a split, its axes).
  if (llvm::Error e = ::tessel::checkYamlText(text, name, "a plan", 64))
    return std::move(e);
  llvm::yaml::Stream stream(text, sm);
  auto doc = stream.begin();
  if (doc == stream.end())
    return createStringError(llvm::inconvertibleErrorCode(),
                             name + ": the plan is empty");
  PlanReader reader(sm, name);
  Expected<Plan> plan = reader.read(*doc);
  if (!diag.empty()) {
    llvm::consumeError(plan.takeError());
    return createStringError(llvm::inconvertibleErrorCode(),
                             name + ":" + diag);
  }
  return plan;
}

PlanRule mlir::tessel::batchOverDpRule(StringRef where) {
  PlanRule rule;
  rule.target = PlanRule::Target::Input;
  rule.pattern = "*";
  PlanSplit batch;
  batch.dim = 0;
  batch.axes = {"dp"};
  // A batch dp does not divide is padded, as `pad: auto` pads it in a plan
  // file (a built-in plan cannot be given the key).
  batch.autoPad = true;
  batch.batch = true;
  rule.splits.push_back(batch);
  rule.where = where.str();
  return rule;
}

Expected<Plan> mlir::tessel::loadPlan(StringRef spec) {
  if (spec == "dp") {
    Plan plan;
    plan.rules.push_back(batchOverDpRule("built-in plan 'dp'"));
    return plan;
  }
  auto buffer = llvm::MemoryBuffer::getFile(spec);
  if (!buffer)
    return createStringError(buffer.getError(), "cannot read plan '" + spec +
                                                    "': " +
                                                    buffer.getError().message());
  return parsePlan((*buffer)->getBuffer(), spec);
}

/// The sub-axes of axis `name` of `size` under the parallel mode `mode`.
static Expected<std::vector<std::pair<std::string, int64_t>>>
expandParallelMode(StringRef name, int64_t size, StringRef mode) {
  namespace ext = ::tessel::ext;
  const ext::ParallelModeDef *def = ext::host::findParallelMode(mode.str());
  auto fail = [](const Twine &message) {
    return createStringError(llvm::inconvertibleErrorCode(), message);
  };
  if (!def)
    return fail("unknown parallel mode '" + mode + "' of mesh axis '" + name +
                "' (a plugin's needs --load-plugin)");
  const std::string who = "parallel mode '" + mode.str() + "' of plugin '" +
                          ext::host::pluginOfParallelMode(mode.str()) + "'";
  std::vector<std::pair<std::string, int64_t>> sub;
  if (std::string why = def->split(size, sub); !why.empty())
    return fail(who + " on axis '" + name + "': " + why);
  SmallVector<int64_t> sizes;
  for (auto &[subName, subSize] : sub) {
    if (subName.empty() || subSize < 1)
      return fail(who + " gives axis '" + name + "' a sub-axis '" + subName +
                  "' of size " + Twine(subSize));
    sizes.push_back(subSize);
    subName = name.str() + "." + subName;
  }
  std::optional<int64_t> product = ::tessel::checkedProduct(sizes);
  if (sub.empty() || product != size)
    return fail(who + " splits axis '" + name + "' of size " + Twine(size) +
                " into sub-axes of " +
                (product ? Twine(*product) : Twine("more than 2^63")) +
                " ranks");
  return sub;
}

Expected<std::vector<std::pair<std::string, int64_t>>>
mlir::tessel::parseMeshSpec(StringRef spec) {
  std::vector<std::pair<std::string, int64_t>> axes;
  SmallVector<StringRef> parts;
  spec.split(parts, ',');
  for (StringRef part : parts) {
    auto [name, sizeAndMode] = part.trim().split('=');
    auto [size, mode] = sizeAndMode.split(':');
    int64_t n;
    if (name.empty() || size.getAsInteger(10, n) || n < 1)
      return createStringError(llvm::inconvertibleErrorCode(),
                               "bad mesh axis '" + part +
                                   "' in --mesh: expected NAME=SIZE with "
                                   "SIZE >= 1, e.g. --mesh dp=2,tp=2");
    if (mode.empty()) {
      axes.emplace_back(name.str(), n);
      continue;
    }
    // NAME=SIZE:MODE, an axis of a parallel mode (docs/extending.md): the
    // mode's sub-axes NAME.SUB, major to minor.
    auto sub = expandParallelMode(name, n, mode);
    if (!sub)
      return sub.takeError();
    axes.insert(axes.end(), sub->begin(), sub->end());
  }
  if (Error e = checkMeshDevices(axes, "--mesh " + spec + ": "))
    return std::move(e);
  return axes;
}

// The spec `rule` gives a tensor of `type`.
static Expected<TensorShardingAttr>
specFor(const PlanRule &rule, RankedTensorType type, StringRef tensor,
        const std::vector<std::pair<std::string, int64_t>> &mesh,
        MLIRContext *ctx, std::string *note = nullptr,
        std::string *advice = nullptr) {
  int64_t rank = type.getRank();
  SmallVector<SmallVector<StringAttr>> dims(rank);
  SmallVector<int64_t> pads(rank, 0);
  for (const PlanSplit &split : rule.splits) {
    const int64_t d = split.dim;
    int64_t dim = d < 0 ? d + rank : d;
    if (dim < 0 || dim >= rank)
      return createStringError(llvm::inconvertibleErrorCode(),
                               rule.where + ": dim " + Twine(d) +
                                   " is out of range for " + tensor +
                                   " of rank " + Twine(rank));
    SmallVector<int64_t> sizes;
    for (const std::string &axis : split.axes) {
      auto it = llvm::find_if(mesh, [&](auto &a) { return a.first == axis; });
      if (it == mesh.end())
        return createStringError(llvm::inconvertibleErrorCode(),
                                 rule.where + ": axis \"" + axis +
                                     "\" (for " + tensor +
                                     ") is not in the mesh");
      sizes.push_back(it->second);
      dims[dim].push_back(StringAttr::get(ctx, axis));
    }
    // Checked: an axis named twice multiplies past what the mesh allows.
    std::optional<int64_t> count = checkedShardCount(sizes);
    if (!count)
      return createStringError(
          llvm::inconvertibleErrorCode(),
          rule.where + ": dim " + Twine(d) + " of " + tensor +
              " is split over [" + llvm::join(split.axes, ", ") +
              "] of sizes " + formatShape(sizes) +
              ", whose product is more than the " + Twine(kMaxMeshDevices) +
              " shards a mesh may have");
    const int64_t shards = *count;
    int64_t size = type.getDimSize(dim);
    if (split.batch && !ShapedType::isDynamic(size) && size < shards) {
      dims[dim].clear();
      if (note)
        *note = (tensor + " dim " + Twine(dim) + " (the batch, size " +
                 Twine(size) + ") is not split over [" +
                 llvm::join(split.axes, ", ") + "] (" + Twine(shards) +
                 " shards): fewer rows than shards, so every shard runs "
                 "the whole batch")
                    .str();
      if (advice)
        *advice = ("export the model at a batch of at least " +
                   Twine(shards) + " to split it")
                      .str();
      continue;
    }
    if (split.autoPad && !ShapedType::isDynamic(size))
      pads[dim] = (shards - size % shards) % shards;
    else
      pads[dim] = split.pad;
    std::optional<int64_t> padded = ::tessel::checkedAdd(size, pads[dim]);
    if (!ShapedType::isDynamic(size) && !padded)
      return createStringError(llvm::inconvertibleErrorCode(),
                               rule.where + ": dim " + Twine(d) + " of " +
                                   tensor + " (size " + Twine(size) +
                                   ") with pad " + Twine(pads[dim]) +
                                   " overflows 64 bits");
    // Said in the plan's words: the rule, and the key that fixes it.
    if (!ShapedType::isDynamic(size) && *padded % shards != 0)
      return createStringError(
          llvm::inconvertibleErrorCode(),
          rule.where + ": dim " + Twine(d) + " of " + tensor + " (size " +
              Twine(size) + (pads[dim] ? ", pad " + Twine(pads[dim]) : "") +
              ") does not divide into " + Twine(shards) + " shards over [" +
              llvm::join(split.axes, ", ") +
              "]; " +
              (pads[dim] ? "make the pad `pad: auto`" : "add `pad: auto` to the split") +
              " (split: {dim: " + Twine(d) +
              ", axes: [" + llvm::join(split.axes, ", ") +
              "], pad: auto}: the last shards are padded with zeros), or "
              "give the axes sizes that divide " + Twine(size));
  }
  SmallVector<DimShardingAttr> dimAttrs;
  for (int64_t dim = 0; dim < rank; ++dim)
    dimAttrs.push_back(DimShardingAttr::get(ctx, dims[dim], pads[dim]));
  return TensorShardingAttr::get(ctx, FlatSymbolRefAttr::get(ctx, "mesh"),
                                 dimAttrs, {});
}

StringRef mlir::tessel::nodeName(Operation *op) {
  Location loc = op->getLoc();
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().getValue();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (auto name = dyn_cast<NameLoc>(l))
        return name.getName().getValue();
  return "";
}

Error mlir::tessel::applyPlan(
    ModuleOp module, const std::vector<std::pair<std::string, int64_t>> &mesh,
    const Plan &plan, std::vector<std::string> *unmatched,
    std::vector<std::string> *wholeBatches) {
  MLIRContext *ctx = module.getContext();
  if (Error e = checkMeshDevices(mesh, ""))
    return e;
  OpBuilder b(ctx);
  b.setInsertionPointToStart(module.getBody());
  SmallVector<StringRef> names;
  SmallVector<int64_t> sizes;
  for (const auto &[n, s] : mesh) {
    names.push_back(n);
    sizes.push_back(s);
  }
  MeshOp::create(b, module.getLoc(), b.getStringAttr("mesh"),
                   b.getStrArrayAttr(names), b.getDenseI64ArrayAttr(sizes));

  std::vector<llvm::GlobPattern> globs;
  for (const PlanRule &rule : plan.rules) {
    // Braces ({q,k,v}) expand to at most 256 alternatives.
    auto glob = llvm::GlobPattern::create(rule.pattern, /*MaxSubPatterns=*/256);
    if (!glob)
      return createStringError(llvm::inconvertibleErrorCode(),
                               rule.where + ": bad pattern '" + rule.pattern +
                                   "': " + llvm::toString(glob.takeError()));
    globs.push_back(std::move(*glob));
  }
  std::vector<bool> used(plan.rules.size(), false);
  // For a rule that matched names but claimed nothing: the earlier rule
  // that claimed what it matched.
  std::vector<int> shadowedBy(plan.rules.size(), -1);
  auto shadow = [&](size_t later, size_t earlier) {
    if (shadowedBy[later] < 0)
      shadowedBy[later] = static_cast<int>(earlier);
  };
  StringRef attr = TesselDialect::kShardingAttrName;

  for (auto fn : module.getOps<func::FuncOp>()) {
    auto inputNames = fn->getAttrOfType<ArrayAttr>(TesselDialect::kInputNamesAttrName);
    for (BlockArgument arg : fn.getArguments()) {
      std::string name =
          inputNames && arg.getArgNumber() < inputNames.size()
              ? cast<StringAttr>(inputNames[arg.getArgNumber()]).str()
              : ("input" + Twine(arg.getArgNumber())).str();
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      std::optional<size_t> winner;
      for (auto [i, rule] : llvm::enumerate(plan.rules)) {
        if (rule.target != PlanRule::Target::Input || !type ||
            !globs[i].match(name))
          continue;
        if (winner) {
          shadow(i, *winner);
          continue;
        }
        std::string note, advice;
        auto spec = specFor(rule, type, "input '" + name + "'", mesh, ctx,
                            &note, &advice);
        if (!spec)
          return spec.takeError();
        if (!note.empty()) {
          mlir::emitWarning(fn.getLoc())
              << rule.where << ": " << note << " (" << advice << ")";
          if (wholeBatches)
            wholeBatches->push_back(note);
        }
        fn.setArgAttr(arg.getArgNumber(), attr, *spec);
        used[i] = true;
        winner = i;
      }
    }
    // Weights by name, then the weight inputs of nodes by node name; the
    // first rule that matches a tensor wins.
    Error err = Error::success();
    llvm::DenseMap<Operation *, size_t> claimedBy;
    // Rule i gives `w` (named `what` in messages) its spec, unless an
    // earlier rule did; false, with err set, when the spec does not fit.
    auto claim = [&](size_t i, const PlanRule &rule, WeightOp w,
                     const std::string &what) {
      if (auto it = claimedBy.find(w); it != claimedBy.end()) {
        shadow(i, it->second);
        return true;
      }
      used[i] = true;
      auto spec = specFor(rule, w.getType(), what, mesh, ctx);
      if (!spec) {
        err = spec.takeError();
        return false;
      }
      w->setAttr(attr, *spec);
      claimedBy[w] = i;
      return true;
    };
    fn.walk([&](WeightOp w) {
      for (auto [i, rule] : llvm::enumerate(plan.rules))
        if (rule.target == PlanRule::Target::Weight &&
            globs[i].match(w.getName()) &&
            !claim(i, rule, w, "weight '" + w.getName().str() + "'"))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (err)
      return err;
    fn.walk([&](Operation *op) {
      if (err)
        return WalkResult::interrupt();
      std::string node = nodeName(op).str();
      if (node.empty())
        return WalkResult::advance();
      for (auto [i, rule] : llvm::enumerate(plan.rules)) {
        if (rule.target != PlanRule::Target::Node || !globs[i].match(node))
          continue;
        WeightOp weight;
        if (rule.operand >= 0) {
          if (rule.operand < op->getNumOperands())
            weight = op->getOperand(rule.operand).getDefiningOp<WeightOp>();
        } else {
          for (Value v : op->getOperands())
            if ((weight = v.getDefiningOp<WeightOp>()))
              break;
        }
        if (!weight) {
          err = createStringError(
              llvm::inconvertibleErrorCode(),
              rule.where + ": node '" + node + "' has no weight operand" +
                  (rule.operand >= 0 ? " " + std::to_string(rule.operand) : ""));
          return WalkResult::interrupt();
        }
        // Several rules may name one node (its weight and its bias); per
        // tensor the first one wins.
        if (!claim(i, rule, weight, "the weight of node '" + node + "'"))
          return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (err)
      return err;
  }
  if (unmatched)
    for (auto [i, rule] : llvm::enumerate(plan.rules))
      if (!used[i])
        unmatched->push_back(
            shadowedBy[i] >= 0
                ? rule.where + ": '" + rule.pattern +
                      "' is shadowed by the rule at " +
                      plan.rules[shadowedBy[i]].where + " ('" +
                      plan.rules[shadowedBy[i]].pattern +
                      "'): every tensor it matches is claimed there first"
                : rule.where + ": '" + rule.pattern + "' matches nothing");
  return Error::success();
}

namespace {
/// A YAML double-quoted scalar.
std::string quoted(StringRef text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

void printSplit(const PlanSplit &split, raw_ostream &os) {
  os << "{dim: " << split.dim << ", axes: [";
  llvm::interleaveComma(split.axes, os);
  os << "]";
  if (split.autoPad)
    os << ", pad: auto";
  else if (split.pad)
    os << ", pad: " << split.pad;
  os << "}";
}
} // namespace

void mlir::tessel::printPlan(const Plan &plan, raw_ostream &os) {
  if (!plan.mesh.empty()) {
    os << "mesh: {";
    llvm::interleaveComma(plan.mesh, os, [&](const auto &axis) {
      os << axis.first << ": " << axis.second;
    });
    os << "}\n";
  }
  os << "rules:";
  if (plan.rules.empty() && plan.stageRules.empty())
    os << " []";
  os << "\n";
  auto target = [](PlanRule::Target t) {
    switch (t) {
    case PlanRule::Target::Weight:
      return "weight";
    case PlanRule::Target::Node:
      return "node";
    case PlanRule::Target::Input:
      return "input";
    }
    return "weight";
  };
  for (const PlanRule &r : plan.rules) {
    os << "  - " << target(r.target) << ": " << quoted(r.pattern) << "\n";
    if (r.operand >= 0)
      os << "    operand: " << r.operand << "\n";
    if (r.splits.empty()) {
      os << "    replicate: true\n";
      continue;
    }
    os << "    split: ";
    if (r.splits.size() == 1) {
      printSplit(r.splits.front(), os);
    } else {
      os << "[";
      llvm::interleaveComma(r.splits, os,
                            [&](const PlanSplit &sp) { printSplit(sp, os); });
      os << "]";
    }
    os << "\n";
  }
  for (const PlanRule &r : plan.stageRules)
    os << "  - node: " << quoted(r.pattern) << "\n    stage: " << r.stage
       << "\n";
}

std::string mlir::tessel::literalGlob(StringRef name) {
  std::string out;
  for (char c : name) {
    if (StringRef("*?[]{}\\").contains(c))
      out += '\\';
    out += c;
  }
  return out;
}
