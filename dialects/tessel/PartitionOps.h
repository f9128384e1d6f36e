//===- PartitionOps.h - ops of partitioned programs -------------*- C++ -*-===//

#ifndef TESSEL_DIALECT_PARTITIONOPS_H
#define TESSEL_DIALECT_PARTITIONOPS_H

#include "dialects/tessel/TesselOps.h"

#define GET_OP_CLASSES
#include "dialects/tessel/PartitionOps.h.inc"

#endif // TESSEL_DIALECT_PARTITIONOPS_H
