//===- Version.h - The extension API's version ------------------*- C++ -*-===//
//
// The version of the plugin API in include/tessel/Extension/. A plugin
// records the version it was built against (TESSEL_PLUGIN, Plugin.h); Tessel
// loads only plugins built against its own version, and refuses others with
// both numbers. The number changes whenever a header of this directory
// changes in a way that breaks plugins built before (a changed struct
// layout, a changed or inserted virtual method, a changed signature).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_EXTENSION_VERSION_H
#define TESSEL_EXTENSION_VERSION_H

#define TESSEL_EXTENSION_API_VERSION 1

#endif // TESSEL_EXTENSION_VERSION_H
