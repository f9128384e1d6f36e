//===- Crc32c.cpp - CRC-32C checksums of artifact files -------------------===//
#include "tessel/runtime/Artifact.h"

#include <array>
#include <cstring>
#if defined(__SSE4_2__)
#include <nmmintrin.h>
#endif

namespace tessel::runtime {

#if !defined(__SSE4_2__)
namespace {
std::array<uint32_t, 256> makeTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k)
      c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
} // namespace
#endif

uint32_t crc32c(const void *data, size_t size, uint32_t crc) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  uint32_t c = ~crc;
#if defined(__SSE4_2__)
  // Three independent streams hide the 3-cycle latency of crc32q; combine
  // them by running the tail streams sequentially is not possible without
  // shifts, so use the simple single stream (about 10 GB/s here).
  uint64_t c64 = c;
  while (size >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c64 = _mm_crc32_u64(c64, v);
    p += 8;
    size -= 8;
  }
  c = static_cast<uint32_t>(c64);
  while (size--)
    c = _mm_crc32_u8(c, *p++);
#else
  static const std::array<uint32_t, 256> table = makeTable();
  while (size--)
    c = table[(c ^ *p++) & 0xff] ^ (c >> 8);
#endif
  return ~c;
}

} // namespace tessel::runtime
