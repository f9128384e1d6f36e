//===- Graph.h - Building Tessel IR from a plugin ---------------*- C++ -*-===//
//
// What a gradient rule (Op.h) or a gradient handler (GradientHandler.h) sees
// of the program it extends: values by handle, and a builder that appends
// ops at the place Tessel chose. create() builds Tessel's elementwise ops by
// their IR name ("tessel.add", "tessel.mul", "tessel.sigmoid", ...:
// docs/generated/; numpy broadcasting, the result of the first operand's
// element type) and custom ops by name (their type rule gives the results);
// cast() and scalar() the rest of what a rule usually needs. A method that
// fails returns an invalid Value (or nothing) and leaves the reason in
// error(); the caller passes it on as its own error.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_EXTENSION_GRAPH_H
#define TESSEL_EXTENSION_GRAPH_H

#include "tessel/Extension/Types.h"

#include <string>
#include <vector>

namespace tessel::ext {

/// A value of the program being built: a handle, valid in one builder.
struct Value {
  int32_t id = -1;
  explicit operator bool() const { return id >= 0; }
};

class GraphBuilder {
public:
  virtual ~GraphBuilder() = default;

  /// The type of `v`.
  virtual TensorType typeOf(Value v) = 0;

  /// Op `name` on `operands` with `attrs`; its results. Tessel ops infer
  /// their result types (a custom op's come from its inferTypes). Empty on
  /// failure.
  virtual std::vector<Value> create(const std::string &name,
                                    const std::vector<Value> &operands,
                                    const Attrs &attrs = {}) = 0;

  /// `v` converted to element type `to`.
  virtual Value cast(Value v, const DType &to) = 0;

  /// A rank-0 constant of `dtype` (binary ops broadcast it).
  virtual Value scalar(double value, const DType &dtype) = 0;

  /// A persistent state of the training step named `name`, zeros at the
  /// first step, checkpointed with the others (gradient handlers: error
  /// feedback, momentum). Invalid outside a training program.
  virtual Value state(const std::string &name, const TensorType &type) = 0;

  /// `state` (from state()) holds `value` from the next step on.
  virtual bool assign(Value state, Value value) = 0;

  /// Gradient handlers only: the reduction this gradient needs (the
  /// all_reduce over the data-parallel axes that the plain handler does)
  /// applied to `v`, which has the gradient's shape and any element type.
  virtual Value reduce(Value v) = 0;

  /// Why the last failing call failed.
  virtual std::string error() const = 0;

  /// The first result of create(), or an invalid Value.
  Value create1(const std::string &name, const std::vector<Value> &operands,
                const Attrs &attrs = {}) {
    std::vector<Value> r = create(name, operands, attrs);
    return r.empty() ? Value() : r[0];
  }
};

} // namespace tessel::ext

#endif // TESSEL_EXTENSION_GRAPH_H
