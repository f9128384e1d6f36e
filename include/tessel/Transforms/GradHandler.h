//===- GradHandler.h - gradient handlers, built in and plugins' -*- C++ -*-===//
#ifndef TESSEL_TRANSFORMS_GRADHANDLER_H
#define TESSEL_TRANSFORMS_GRADHANDLER_H

#include "tessel/Extension/Plugin.h"

#include <string>

namespace mlir::tessel {

/// Registers the built-in gradient handlers (`ddp`) through the plugins' API.
void registerBuiltinGradientHandlers(::tessel::ext::Registrar &r);

/// Registers Tessel's built-in extensions once, as the plugin "tessel";
/// returns "" or the error.
std::string ensureBuiltinExtensions(const std::string &hostName);

} // namespace mlir::tessel

#endif // TESSEL_TRANSFORMS_GRADHANDLER_H
