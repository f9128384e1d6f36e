//===- TesselTraits.h - properties of tessel ops ----------------*- C++ -*-===//
//
// The op properties of TesselInterfaces.td ("Op properties"): marker traits
// that analyses query with `op->hasTrait<OpTrait::tessel::X>()`. Their
// meaning is documented there; they verify nothing.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_DIALECT_TESSELTRAITS_H
#define TESSEL_DIALECT_TESSELTRAITS_H

#include "mlir/IR/OpDefinition.h"

namespace mlir::OpTrait::tessel {

template <typename ConcreteType>
class Elementwise : public TraitBase<ConcreteType, Elementwise> {};

template <typename ConcreteType>
class ZeroPreserving : public TraitBase<ConcreteType, ZeroPreserving> {};

template <typename ConcreteType>
class FinitePreserving : public TraitBase<ConcreteType, FinitePreserving> {};

template <typename ConcreteType>
class DataMovement : public TraitBase<ConcreteType, DataMovement> {};

template <typename ConcreteType>
class Collective : public TraitBase<ConcreteType, Collective> {};

} // namespace mlir::OpTrait::tessel

#endif // TESSEL_DIALECT_TESSELTRAITS_H
