//===- GradientHandler.h - What happens to gradients ------------*- C++ -*-===//
//
// Colossal-AI's GradientHandler: the step between the backward pass and the
// optimizer that reduces each parameter's gradient across data-parallel
// ranks. In Tessel the plain handler ("ddp") is the all_reduce that
// partitioning inserts for a gradient that is a partial sum over the
// data-parallel axes; `tesselc --grad-handler NAME` replaces each of those
// with what the handler builds.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_EXTENSION_GRADIENTHANDLER_H
#define TESSEL_EXTENSION_GRADIENTHANDLER_H

#include "tessel/Extension/Graph.h"

#include <functional>
#include <string>

namespace tessel::ext {

/// One gradient to reduce.
struct GradientToReduce {
  /// The parameter whose gradient it is ("" when Tessel cannot tell).
  std::string parameter;
  /// Its position among the step's gradient reductions (0, 1, ...): a
  /// unique suffix for names of state.
  int index = 0;
  /// This rank's partial gradient.
  Value gradient;
};

struct GradientHandlerDef {
  std::string name;
  std::string description;
  /// Sets `reduced` to the reduced gradient (the gradient's type), built
  /// with b (b.reduce() is the plain all_reduce); returns "" or an error.
  std::function<std::string(GraphBuilder &b, const GradientToReduce &g,
                            Value &reduced)>
      handle;
};

} // namespace tessel::ext

#endif // TESSEL_EXTENSION_GRADIENTHANDLER_H
