//===- Op.h - A custom op: import, sharding, gradient, kernel ---*- C++ -*-===//
//
// An op that Tessel does not know, described by a plugin. In Tessel IR it is a
// `tessel.custom_call` whose `target` is the op's name (with its attributes),
// and every property of the op is looked up by that name here:
//
//   onnx          which ONNX node (domain, op type, since-version) imports
//                 into it, and which ONNX attributes it keeps;
//   inferTypes    its result types from its operand types and attributes;
//   shardingRule  how its dims correspond (the factor rule of
//                 docs/sharding.md); without one it is a propagation barrier
//                 whose operands are gathered;
//   gradient      its gradient rule, built with a GraphBuilder;
//   cpuKernel     its CPU kernel (tessel-run).
//
// Only `name` and `inferTypes` are required; the others are what the uses
// of the op need (training needs `gradient`, tessel-run needs `cpuKernel`).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_EXTENSION_OP_H
#define TESSEL_EXTENSION_OP_H

#include "tessel/Extension/Graph.h"
#include "tessel/Extension/Types.h"

#include <functional>
#include <string>
#include <vector>

namespace tessel::ext {

/// An ONNX attribute the op keeps, with ONNX's default (`required`: none).
struct OnnxAttr {
  std::string name;
  AttrValue dflt;
  bool required = false;
};

/// The ONNX node that imports into the op: `opType` of `domain` from that
/// domain's opset `since` on.
struct OnnxMapping {
  std::string domain;
  std::string opType;
  int since = 1;
  std::vector<OnnxAttr> attrs;
};

/// One factor of a sharding rule: a size and the dims it maps to.
struct RuleDim {
  bool isResult = false;
  unsigned index = 0; // operand or result number
  int64_t dim = 0;
};
struct RuleFactor {
  enum class Kind { Pass, Reduction, NeedReplication };
  int64_t size = 1;
  std::vector<RuleDim> dims;
  Kind kind = Kind::Pass;
};
struct ShardingRule {
  std::vector<RuleFactor> factors;
};

/// The rule of an op whose operands and results all have one shape: dim d of
/// every tensor is factor d.
inline ShardingRule elementwiseRule(const std::vector<TensorType> &operands,
                                    const std::vector<TensorType> &results) {
  ShardingRule r;
  const std::vector<int64_t> &shape =
      results.empty() ? operands.at(0).shape : results[0].shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    RuleFactor f;
    f.size = shape[d];
    for (unsigned i = 0; i < operands.size(); ++i)
      f.dims.push_back({false, i, int64_t(d)});
    for (unsigned i = 0; i < results.size(); ++i)
      f.dims.push_back({true, i, int64_t(d)});
    r.factors.push_back(f);
  }
  return r;
}

/// What a gradient rule gets: the op's operands and results, and the
/// gradients of its results (invalid where a result does not reach the loss).
struct GradientArgs {
  std::vector<Value> operands, results, resultGrads;
  Attrs attrs;
};

/// One instance of the op in a program, as its kernel is built for it.
struct KernelInstance {
  std::vector<TensorType> operands, results;
  Attrs attrs;
};
/// Runs the op: buffers in the instance's types, row-major.
using CpuKernelFn =
    std::function<void(const void *const *operands, void *const *results)>;

struct CustomOp {
  /// The op's name: its `tessel.custom_call` target, e.g. "example.FancyGelu".
  std::string name;
  /// The ONNX node it imports from; empty opType: none (an op that only
  /// gradient rules or handlers create).
  OnnxMapping onnx;
  /// Result types; returns "" or why the operands do not fit.
  std::function<std::string(const std::vector<TensorType> &operands,
                            const Attrs &attrs,
                            std::vector<TensorType> &results)>
      inferTypes;
  std::function<ShardingRule(const std::vector<TensorType> &operands,
                             const std::vector<TensorType> &results,
                             const Attrs &attrs)>
      shardingRule;
  /// Appends one gradient per operand to operandGrads (invalid: none);
  /// returns "" or why there is no rule.
  std::function<std::string(GraphBuilder &b, const GradientArgs &args,
                            std::vector<Value> &operandGrads)>
      gradient;
  /// Builds the kernel of one instance, once, when the program is loaded;
  /// returns "" or why the instance is not supported.
  std::function<std::string(const KernelInstance &instance, CpuKernelFn &run)>
      cpuKernel;
};

} // namespace tessel::ext

#endif // TESSEL_EXTENSION_OP_H
