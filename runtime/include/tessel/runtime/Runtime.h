//===- Runtime.h - The Tessel runtime, all of it ----------------*- C++ -*-===//
#ifndef TESSEL_RUNTIME_RUNTIME_H
#define TESSEL_RUNTIME_RUNTIME_H

#include "tessel/runtime/Artifact.h"
#include "tessel/runtime/ArtifactBuilder.h"
#include "tessel/runtime/BufferPlanner.h"
#include "tessel/runtime/CollectiveShapes.h"
#include "tessel/runtime/DType.h"
#include "tessel/runtime/Executor.h"
#include "tessel/runtime/Npy.h"
#include "tessel/runtime/OpKind.h"
#include "tessel/runtime/Program.h"
#include "tessel/runtime/Status.h"
#include "tessel/runtime/Tensor.h"

#endif // TESSEL_RUNTIME_RUNTIME_H
