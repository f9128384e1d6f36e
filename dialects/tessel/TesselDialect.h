//===- TesselDialect.h - the tessel dialect ---------------------*- C++ -*-===//
//
// The dialect, its enums, attributes and interfaces. Include TesselOps.h for
// the ops as well.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_DIALECT_TESSELDIALECT_H
#define TESSEL_DIALECT_TESSELDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "dialects/tessel/TesselDialect.h.inc"
#include "dialects/tessel/TesselEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/tessel/TesselAttrs.h.inc"

#include "dialects/tessel/TesselInterfaces.h.inc"

#endif // TESSEL_DIALECT_TESSELDIALECT_H
