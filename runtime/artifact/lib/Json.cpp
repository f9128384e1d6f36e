//===- Json.cpp - The JSON the runtime writes and reads -------------------===//
#include "tessel/runtime/Json.h"

#include "tessel/support/JsonNesting.h"

#include <cctype>
#include <cstdio>
#include <cstring>

namespace tessel::runtime {

std::string jsonQuote(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

void appendUtf8(std::string &out, unsigned v) {
  if (v < 0x80) {
    out += static_cast<char>(v);
  } else if (v < 0x800) {
    out += static_cast<char>(0xC0 | (v >> 6));
    out += static_cast<char>(0x80 | (v & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (v >> 12));
    out += static_cast<char>(0x80 | ((v >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (v & 0x3F));
  }
}

namespace {

class JsonParser {
public:
  JsonParser(std::string_view s, size_t maxDepth) : s(s), maxDepth(maxDepth) {}
  bool parse(Json &out) {
    if (!value(out, 0))
      return false;
    space();
    return pos == s.size();
  }
  std::string error;

private:
  std::string_view s;
  size_t maxDepth;
  size_t pos = 0;

  bool fail(const std::string &m) {
    if (error.empty())
      error = m + " at byte " + std::to_string(pos);
    return false;
  }
  void space() {
    while (pos < s.size() &&
           (s[pos] == ' ' || s[pos] == '\n' || s[pos] == '\r' || s[pos] == '\t'))
      ++pos;
  }
  /// Consumes `c` if it comes next.
  bool eat(char c) {
    if (pos >= s.size() || s[pos] != c)
      return false;
    ++pos;
    return true;
  }
  /// The entries of an object or array (the opening bracket is next):
  /// element() parses each; ',' separates them, `close` ends them.
  template <typename F> bool sequence(char close, F element) {
    ++pos;
    space();
    if (eat(close))
      return true;
    while (true) {
      if (!element())
        return false;
      space();
      if (eat(','))
        continue;
      if (eat(close))
        return true;
      return fail(std::string("expected ',' or '") + close + "'");
    }
  }
  bool value(Json &out, int depth) {
    if (depth > int(maxDepth)) // jsonNesting refused it before
      return fail("JSON nested more than " + std::to_string(maxDepth) +
                  " deep");
    space();
    if (pos >= s.size())
      return fail("unexpected end of JSON");
    char c = s[pos];
    if (c == '{') {
      out.kind = Json::Object;
      return sequence('}', [&] {
        std::string key;
        space();
        if (!string(key))
          return false;
        space();
        if (!eat(':'))
          return fail("expected ':'");
        out.members.emplace_back(std::move(key), Json());
        return value(out.members.back().second, depth + 1);
      });
    }
    if (c == '[') {
      out.kind = Json::Array;
      return sequence(']', [&] {
        out.items.emplace_back();
        return value(out.items.back(), depth + 1);
      });
    }
    if (c == '"') {
      out.kind = Json::String;
      return string(out.str);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      out.kind = Json::Number;
      size_t b = pos;
      bool digitsOnly = c != '-';
      uint64_t v = 0;
      bool overflow = false;
      while (pos < s.size() &&
             (isdigit(static_cast<unsigned char>(s[pos])) || s[pos] == '-' ||
              s[pos] == '+' || s[pos] == '.' || s[pos] == 'e' ||
              s[pos] == 'E')) {
        if (!isdigit(static_cast<unsigned char>(s[pos])))
          digitsOnly = false;
        else if (v > (UINT64_MAX - 9) / 10)
          overflow = true;
        else
          v = v * 10 + (s[pos] - '0');
        ++pos;
      }
      if (pos == b)
        return fail("bad number");
      out.isInteger = digitsOnly && !overflow;
      out.integer = v;
      return true;
    }
    for (const char *lit : {"true", "false", "null"}) {
      size_t n = std::strlen(lit);
      if (s.substr(pos, n) == lit) {
        pos += n;
        out.kind = lit[0] == 'n' ? Json::Null : Json::Bool;
        return true;
      }
    }
    return fail("unexpected character");
  }
  bool string(std::string &out) {
    if (pos >= s.size() || s[pos] != '"')
      return fail("expected a string");
    ++pos;
    while (pos < s.size() && s[pos] != '"') {
      char c = s[pos++];
      if (c == '\\') {
        if (pos >= s.size())
          return fail("bad escape");
        char e = s[pos++];
        switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u': {
          if (pos + 4 > s.size())
            return fail("bad \\u escape");
          unsigned v = 0;
          for (int i = 0; i < 4; ++i) {
            char h = s[pos++];
            v <<= 4;
            if (h >= '0' && h <= '9')
              v |= h - '0';
            else if (h >= 'a' && h <= 'f')
              v |= h - 'a' + 10;
            else if (h >= 'A' && h <= 'F')
              v |= h - 'A' + 10;
            else
              return fail("bad \\u escape");
          }
          // Names are ASCII in practice; encode BMP code points as UTF-8.
          appendUtf8(out, v);
          break;
        }
        default:
          out += e;
        }
      } else {
        out += c;
      }
    }
    if (pos >= s.size())
      return fail("unterminated string");
    ++pos;
    return true;
  }
};

} // namespace

const Json *Json::find(std::string_view key) const {
  for (const auto &[k, v] : members)
    if (k == key)
      return &v;
  return nullptr;
}

bool parseJson(std::string_view text, Json &out, std::string &error,
               size_t maxDepth, bool *tooDeep) {
  if (tooDeep)
    *tooDeep = false;
  // The parser recurses once per level: the depth is checked first.
  if (JsonNesting n = jsonNesting(text, maxDepth); n.exceeds()) {
    error = n.describe(maxDepth);
    if (tooDeep)
      *tooDeep = true;
    return false;
  }
  out = Json();
  JsonParser parser(text, maxDepth);
  if (parser.parse(out))
    return true;
  error = parser.error;
  return false;
}

} // namespace tessel::runtime
