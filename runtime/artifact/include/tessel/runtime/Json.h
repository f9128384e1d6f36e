//===- Json.h - The JSON the runtime writes and reads -----------*- C++ -*-===//
//
// The runtime never depends on LLVM (llvm::json): the few pieces of JSON it
// handles (safetensors headers, checkpoint indices, Chrome traces) share
// these helpers and this one reader.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_JSON_H
#define TESSEL_RUNTIME_JSON_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessel::runtime {

/// `s` as a JSON string literal, quotes included.
std::string jsonQuote(const std::string &s);

/// Appends the UTF-8 encoding of the BMP code point `v` (a \uXXXX escape).
void appendUtf8(std::string &out, unsigned v);

/// A parsed JSON value: objects, arrays, strings and non-negative integers
/// (other numbers are parsed, kept as Number without `isInteger`).
struct Json {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  bool isInteger = false; // a Number of digits only, below 2^64
  uint64_t integer = 0;
  std::string str;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members; // in the text's order
  /// The member `key` of an object (the first, if repeated), else null.
  const Json *find(std::string_view key) const;
};

/// Parses the whole of `text` into `out`. On malformed text, false and
/// `error` says what and at which byte ("expected ':' at byte 12"); text
/// whose arrays and objects nest deeper than `maxDepth` is refused before
/// parsing (the parser recurses once per level), `error` then saying "nested
/// N deep at byte B (the limit is L)" and `*tooDeep` set.
bool parseJson(std::string_view text, Json &out, std::string &error,
               size_t maxDepth, bool *tooDeep = nullptr);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_JSON_H
