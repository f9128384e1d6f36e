//===- NcclCommunicator.h - Collectives on CUDA devices over NCCL -*- C++
//-*-===//
#ifndef TESSEL_RUNTIME_COMM_NCCL_NCCLCOMMUNICATOR_H
#define TESSEL_RUNTIME_COMM_NCCL_NCCLCOMMUNICATOR_H

#include "tessel/runtime/Communicator.h"

namespace tessel::runtime::nccl {

/// Rank 0 of each communicator creates the ncclUniqueId and shares it
/// through the store. Tensors are device pointers on `options.device`;
/// collectives are synchronous on an internal stream. The plugin's entry
/// point `tessel_cuda_create_nccl_communicator` calls this; the runtime's
/// createNcclCommunicator (Communicator.h) loads the plugin first.
Status createCommunicator(const CommOptions &options,
                          std::unique_ptr<Communicator> &out);

} // namespace tessel::runtime::nccl

#endif // TESSEL_RUNTIME_COMM_NCCL_NCCLCOMMUNICATOR_H
