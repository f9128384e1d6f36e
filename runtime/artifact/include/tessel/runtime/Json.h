//===- Json.h - The JSON the runtime writes and reads -----------*- C++ -*-===//
//
// The runtime never depends on LLVM (llvm::json): the few pieces of JSON it
// handles (safetensors headers, checkpoint indices, Chrome traces) share
// these helpers.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_JSON_H
#define TESSEL_RUNTIME_JSON_H

#include <string>

namespace tessel::runtime {

/// `s` as a JSON string literal, quotes included.
std::string jsonQuote(const std::string &s);

/// Appends the UTF-8 encoding of the BMP code point `v` (a \uXXXX escape).
void appendUtf8(std::string &out, unsigned v);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_JSON_H
