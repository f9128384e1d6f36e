//===- KernelRegistryTest.cpp - The CPU backend's kernel registry ---------===//
//
// Every op kind has a CPU kernel (runtime/cpu/KernelRegistry.h), and a kind
// without one fails executor creation, naming the instruction, the op and
// the backend, before anything runs.
//
//===----------------------------------------------------------------------===//
#include "KernelRegistry.h"
#include "TestUtil.h"

#include <algorithm>
#include <string>
#include <vector>

using namespace tessel::runtime;
using namespace tessel::runtime::test;

namespace {

// Kinds the CPU backend documents as unsupported (runtime/README.md): none.
const std::vector<OpKind> kUnsupportedOnCpu = {};

TEST(KernelRegistry, EveryKindHasACpuKernel) {
  const cpu::KernelRegistry &kernels = cpu::cpuKernels();
#define TESSEL_X(E, N, V)                                                      \
  if (std::find(kUnsupportedOnCpu.begin(), kUnsupportedOnCpu.end(),            \
                OpKind::E) == kUnsupportedOnCpu.end())                         \
    EXPECT_NE(kernels.find(OpKind::E), nullptr) << "no cpu kernel for " N;
  TESSEL_RUNTIME_OP_KINDS(TESSEL_X)
#undef TESSEL_X
}

/// Unregisters a kind's CPU kernel for one test, and registers it back.
class WithoutKernel {
public:
  explicit WithoutKernel(OpKind kind)
      : kind(kind), factory(cpu::cpuKernels().remove(kind)) {}
  ~WithoutKernel() {
    if (factory)
      cpu::cpuKernels().add(kind, factory);
  }

private:
  OpKind kind;
  cpu::KernelFactory factory;
};

TEST(KernelRegistry, KindWithoutKernelFailsCreation) {
  ProgramBuilder pb;
  int x = pb.addInput("x", DType::F32, {4});
  int t = pb.addBuffer(DType::F32, {4});
  int y = pb.addBuffer(DType::F32, {4});
  pb.addOutput("y", y);
  pb.addOp("relu", {x}, {t});
  pb.addOp("neg", {t}, {y}, {}, "node_name");
  std::shared_ptr<const Program> prog;
  Status s = pb.build(prog);
  ASSERT_TRUE(s.isOk()) << s.message();

  std::unique_ptr<Executor> exec;
  {
    WithoutKernel guard(OpKind::Neg);
    ASSERT_EQ(cpu::cpuKernels().find(OpKind::Neg), nullptr);
    s = createExecutor("cpu", prog, ExecutorOptions(), exec);
    EXPECT_FALSE(s.isOk());
    EXPECT_EQ(s.message(), "instruction 1 (neg 'node_name'): op 'neg' has no "
                           "kernel on the cpu backend");
    EXPECT_EQ(exec, nullptr);
  }

  // Registered back: the same program runs.
  s = createExecutor("cpu", prog, ExecutorOptions(), exec);
  ASSERT_TRUE(s.isOk()) << s.message();
  Tensor in = Tensor::fromVector<float>(DType::F32, {4}, {-1, 2, -3, 4});
  ASSERT_TRUE(exec->setInput("x", in).isOk());
  ASSERT_TRUE(exec->run().isOk());
  Tensor out;
  ASSERT_TRUE(exec->getOutput("y", out).isOk());
  expectNear(out, {-0.0, -2, -0.0, -4}, 0, 0);
}

} // namespace
