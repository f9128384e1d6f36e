//===- Training.cpp - the training step's fused ops on CUDA ---------------===//
//
// gather_grad, gelu_grad, log_softmax_grad, batch_norm_variance,
// batch_norm_grad_sums, batch_norm_grad_input, adam_update and sgd_update
// (dialects/tessel/TrainingOps.td) have CPU kernels only so far: a program
// holding one fails to load on this backend, naming the op. relu_grad is
// a case of the binary kernel (Binary.cpp), since relu's gradient was
// compare + where, which run here.
//
//===----------------------------------------------------------------------===//
#include "CudaKernelRegistry.h"

namespace tessel::runtime::cuda {

void registerTrainingKernels(KernelRegistry &) {}

// Plugins' ops (custom_call) have CPU kernels only.
void registerCustomKernels(KernelRegistry &) {}

} // namespace tessel::runtime::cuda
