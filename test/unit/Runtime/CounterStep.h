//===- CounterStep.h - A hand-built training step for runtime tests -*- C++ -*-===//
//
// The smallest training step with state: what the tests of tessel-run's
// training (TrainRunTest.cpp) and of corrupted artifacts and checkpoints
// (CorruptionTest.cpp) run, save and resume.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TEST_UNIT_RUNTIME_COUNTERSTEP_H
#define TESSEL_TEST_UNIT_RUNTIME_COUNTERSTEP_H

#include "tessel/runtime/ArtifactBuilder.h"

#include <cstdint>
#include <vector>

namespace tessel::runtime::test {

inline constexpr int64_t kN = 4;
inline const std::vector<float> kInit = {1, -2, 0.5f, 3};

/// loss = reduce_sum(s * x) [all_reduce(sum) over `ranks` ranks];
/// s <- s + x; a state `count` of zeros counts the steps (+1 a step).
/// Rank r's s starts at kInit + r.
inline void buildStep(ArtifactBuilder &b, int ranks) {
  if (ranks > 1)
    b.setMesh({{"dp", ranks}});
  for (int r = 0; r < ranks; ++r) {
    ProgramBuilder &p = b.rank(r);
    std::vector<float> init = kInit;
    for (float &v : init)
      v += static_cast<float>(r);
    int s = p.addState("s", DType::F32, {kN}, init.data());
    int z = p.addState("count", DType::F32, {}, nullptr);
    int x = p.addInput("x", DType::F32, {kN});
    const float one = 1;
    int c1 = p.addConstant(DType::F32, {}, &one);
    int sx = p.addBuffer(DType::F32, {kN}, "sx");
    int part = p.addBuffer(DType::F32, {}, "part");
    int loss = part;
    int s1 = p.addBuffer(DType::F32, {kN}, "s1");
    int z1 = p.addBuffer(DType::F32, {}, "z1");
    p.addOp("mul", {s, x}, {sx});
    p.addOp("reduce_sum", {sx}, {part},
            Attrs().is("dims", {}).i("keep_dims", 0));
    if (ranks > 1) {
      loss = p.addBuffer(DType::F32, {}, "loss");
      std::vector<int64_t> group;
      for (int k = 0; k < ranks; ++k)
        group.push_back(k);
      p.addOp("all_reduce", {part}, {loss},
              Attrs().s("kind", "sum").is("group", group));
    }
    p.addOp("add", {s, x}, {s1});
    p.addOp("add", {z, c1}, {z1});
    p.addOp("copy", {s1}, {s});
    p.addOp("copy", {z1}, {z});
    p.addOutput("loss", loss);
    p.addOutput("s1", s1);
  }
}

} // namespace tessel::runtime::test

#endif // TESSEL_TEST_UNIT_RUNTIME_COUNTERSTEP_H
