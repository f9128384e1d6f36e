//===- PackedGemm.cpp - GEMMs on constant weights packed once -------------===//
#include "PackedGemm.h"
#include "ThreadPool.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

namespace tessel::runtime::cpu {

namespace {

// The register tile (6 rows x 16 columns: 12 of the 16 ymm registers hold
// sums, two B's row, one A's broadcast) and the cache blocks: a [kKc x 16]
// panel of B (16 KiB) stays in L1 while the 6-row panels of an [kMc x kKc]
// block of A (144 KiB) stream from L2, and C's [kMc x kNc] block (1.1 MiB)
// stays in L2 and L3 between B's row blocks.
constexpr int64_t kMr = 6, kNr = 16, kKc = 256, kMc = 144, kNc = 2048;
constexpr int64_t kNcPanels = kNc / kNr;

/// The packed copy's floats: k rows of `panels` 16-column panels.
size_t packedFloats(int64_t k, int64_t panels) {
  return static_cast<size_t>(k) * static_cast<size_t>(panels) * kNr;
}

/// Where B's row block starting at row pc puts its panel p (kc rows).
inline const float *panelAt(const float *packed, int64_t panels, int64_t pc,
                            int64_t kc, int64_t p) {
  return packed + pc * panels * kNr + p * kc * kNr;
}

/// Packs op(B)'s rows [pc, pc + kc), every panel.
void packBlock(const float *b, int64_t k, int64_t n, bool transB, int64_t pc,
               int64_t kc, int64_t panels, float *packed) {
  for (int64_t p = 0; p < panels; ++p) {
    float *dst = packed + pc * panels * kNr + p * kc * kNr;
    const int64_t j0 = p * kNr, cols = std::min(kNr, n - j0);
    if (!transB) {
      const float *src = b + pc * n + j0;
      for (int64_t r = 0; r < kc; ++r, src += n, dst += kNr) {
        std::memcpy(dst, src, cols * sizeof(float));
        std::memset(dst + cols, 0, (kNr - cols) * sizeof(float));
      }
      continue;
    }
    // op(B)[r, j] = b[j * k + r]: each column is a row of b.
    for (int64_t j = 0; j < kNr; ++j) {
      if (j < cols) {
        const float *src = b + (j0 + j) * k + pc;
        for (int64_t r = 0; r < kc; ++r)
          dst[r * kNr + j] = src[r];
      } else {
        for (int64_t r = 0; r < kc; ++r)
          dst[r * kNr + j] = 0.0f;
      }
    }
  }
}

/// The rows of the A panel that starts at row p of an mc-row block: 6,
/// except that a tail of 1-3 rows shares the last six with them (4 + 3,
/// 4 + 4, 5 + 4): a tile of fewer than 4 rows has too few independent sums
/// to hide the FMA's latency (128 rows: 20 x 6 + 2 x 4, not 21 x 6 + 2).
int64_t panelRows(int64_t mc, int64_t p) {
  const int64_t left = mc - p;
  if (left <= kMr || left >= 2 * kMr || left - kMr >= 4)
    return std::min(kMr, left);
  return (left + 1) / 2;
}

/// Packs A[ic : ic + mc, pc : pc + kc] into panels of panelRows rows, one
/// after the other (k-major within a panel, at the panel's own stride).
void packA(const float *a, int64_t lda, int64_t ic, int64_t mc, int64_t pc,
           int64_t kc, float *out) {
  for (int64_t p = 0, rows; p < mc; p += rows) {
    rows = panelRows(mc, p);
    float *panel = out + p * kc;
    for (int64_t r = 0; r < rows; ++r) {
      const float *src = a + (ic + p + r) * lda + pc;
      for (int64_t q = 0; q < kc; ++q)
        panel[q * rows + r] = src[q];
    }
  }
}

/// C[r, j] for a tile row's 8 columns: alpha * sum, plus beta * C on the
/// first row block (where beta = 0 reads nothing), plus C on the others.
inline __m256 combine(__m256 sum, const float *c, __m256 alpha, float beta,
                      bool first) {
  sum = _mm256_mul_ps(sum, alpha);
  if (!first)
    return _mm256_add_ps(sum, _mm256_loadu_ps(c));
  if (beta == 0.0f)
    return sum;
  return _mm256_fmadd_ps(_mm256_set1_ps(beta), _mm256_loadu_ps(c), sum);
}

/// One R x 16 tile: the sums of kc products of an A panel (R rows) and a B
/// panel, into C's R x `cols` corner.
template <int R>
void tile(int64_t kc, const float *ap, const float *bp, float *c, int64_t ldc,
          int64_t cols, float alpha, float beta, bool first) {
  // C's tile is read (or written) after kc steps: fetch its lines now, so
  // that their misses overlap the sums.
  for (int r = 0; r < R; ++r) {
    _mm_prefetch(reinterpret_cast<const char *>(c + r * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char *>(c + r * ldc + kNr - 1),
                 _MM_HINT_T0);
  }
  // Named sums: GCC keeps them in registers, where an array of them went
  // through the stack at half the speed. Rows past R are never touched.
  __m256 s00 = _mm256_setzero_ps(), s01 = s00, s10 = s00, s11 = s00, s20 = s00,
         s21 = s00, s30 = s00, s31 = s00, s40 = s00, s41 = s00, s50 = s00,
         s51 = s00;
  for (int64_t q = 0; q < kc; ++q, ap += R, bp += kNr) {
    const __m256 b0 = _mm256_load_ps(bp), b1 = _mm256_load_ps(bp + 8);
    __m256 x;
#define TESSEL_PACKED_ROW(r)                                                   \
  if constexpr (R > r) {                                                       \
    x = _mm256_broadcast_ss(ap + r);                                           \
    s##r##0 = _mm256_fmadd_ps(x, b0, s##r##0);                                 \
    s##r##1 = _mm256_fmadd_ps(x, b1, s##r##1);                                 \
  }
    TESSEL_PACKED_ROW(0)
    TESSEL_PACKED_ROW(1)
    TESSEL_PACKED_ROW(2)
    TESSEL_PACKED_ROW(3)
    TESSEL_PACKED_ROW(4)
    TESSEL_PACKED_ROW(5)
#undef TESSEL_PACKED_ROW
  }
  const __m256 s[kMr][2] = {{s00, s01}, {s10, s11}, {s20, s21},
                            {s30, s31}, {s40, s41}, {s50, s51}};
  const __m256 va = _mm256_set1_ps(alpha);
  if (cols == kNr) {
    for (int r = 0; r < R; ++r) {
      float *row = c + r * ldc;
      _mm256_storeu_ps(row, combine(s[r][0], row, va, beta, first));
      _mm256_storeu_ps(row + 8, combine(s[r][1], row + 8, va, beta, first));
    }
    return;
  }
  alignas(32) float part[kNr];
  for (int r = 0; r < R; ++r) {
    _mm256_store_ps(part, _mm256_mul_ps(s[r][0], va));
    _mm256_store_ps(part + 8, _mm256_mul_ps(s[r][1], va));
    float *row = c + r * ldc;
    for (int64_t j = 0; j < cols; ++j) {
      if (!first)
        row[j] += part[j];
      else if (beta == 0.0f)
        row[j] = part[j];
      else
        row[j] = std::fma(beta, row[j], part[j]);
    }
  }
}

void tileOf(int64_t rows, int64_t kc, const float *ap, const float *bp,
            float *c, int64_t ldc, int64_t cols, float alpha, float beta,
            bool first) {
  switch (rows) {
  case 6:
    return tile<6>(kc, ap, bp, c, ldc, cols, alpha, beta, first);
  case 5:
    return tile<5>(kc, ap, bp, c, ldc, cols, alpha, beta, first);
  case 4:
    return tile<4>(kc, ap, bp, c, ldc, cols, alpha, beta, first);
  case 3:
    return tile<3>(kc, ap, bp, c, ldc, cols, alpha, beta, first);
  case 2:
    return tile<2>(kc, ap, bp, c, ldc, cols, alpha, beta, first);
  default:
    return tile<1>(kc, ap, bp, c, ldc, cols, alpha, beta, first);
  }
}

struct FreeDeleter {
  void operator()(float *p) const { std::free(p); }
};

/// This thread's A block: kMc x kKc floats, kept for the thread's life;
/// null when they cannot be had.
float *aBlockScratch() {
  thread_local std::unique_ptr<float, FreeDeleter> block(
      static_cast<float *>(std::aligned_alloc(64, kMc * kKc * sizeof(float))));
  return block.get();
}

bool hasAvx2Fma() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

} // namespace

bool packedGemmPreferred() {
  static const bool preferred = [] {
    if (!hasAvx2Fma())
      return false;
    const char *env = std::getenv("TESSEL_PACKED_GEMM");
    if (env && std::string(env) == "1")
      return true;
    if (env && std::string(env) == "0")
      return false;
    return !__builtin_cpu_supports("avx512f");
  }();
  return preferred;
}

std::unique_ptr<PackedGemm> PackedGemm::create(const float *b, int64_t k,
                                               int64_t n, bool transB) {
  if (k <= 0 || n <= 0 || !hasAvx2Fma())
    return nullptr;
  const int64_t panels = (n + kNr - 1) / kNr;
  if (k > int64_t(1) << 40 || panels > (int64_t(1) << 40) / k)
    return nullptr;
  const size_t bytes = packedFloats(k, panels) * sizeof(float);
  auto *packed = static_cast<float *>(std::aligned_alloc(64, bytes));
  if (!packed)
    return nullptr;
  for (int64_t pc = 0; pc < k; pc += kKc)
    packBlock(b, k, n, transB, pc, std::min(kKc, k - pc), panels, packed);
  return std::unique_ptr<PackedGemm>(new PackedGemm(k, n, packed));
}

PackedGemm::PackedGemm(int64_t k, int64_t n, float *packed)
    : kDim(k), nDim(n), panels((n + kNr - 1) / kNr), packed(packed) {}

PackedGemm::~PackedGemm() { std::free(packed); }

size_t PackedGemm::bytes() const {
  return packedFloats(kDim, panels) * sizeof(float);
}

void PackedGemm::column(int64_t j, float *out) const {
  const int64_t p = j / kNr, lane = j % kNr;
  for (int64_t pc = 0; pc < kDim; pc += kKc) {
    const int64_t kc = std::min(kKc, kDim - pc);
    const float *src = panelAt(packed, panels, pc, kc, p) + lane;
    for (int64_t r = 0; r < kc; ++r)
      out[pc + r] = src[r * kNr];
  }
}

bool PackedGemm::multiply(int64_t m, const float *a, int64_t lda, float alpha,
                          float beta, float *c, int64_t ldc,
                          ThreadPool &pool) const {
  if (m <= 0)
    return true;
  // Enough panels a thread that its sums outweigh packing A again.
  const int64_t grain = std::max<int64_t>(
      1, (int64_t(1) << 21) / std::max<int64_t>(1, m * kDim * kNr));
  std::atomic<bool> ok{true};
  pool.parallelFor(panels, grain, [&](int64_t p0, int64_t p1) {
    float *pa = aBlockScratch();
    if (!pa) {
      ok = false;
      return;
    }
    for (int64_t jc = p0; jc < p1; jc += kNcPanels) {
      const int64_t jEnd = std::min(p1, jc + kNcPanels);
      for (int64_t ic = 0; ic < m; ic += kMc) {
        const int64_t mc = std::min(kMc, m - ic);
        for (int64_t pc = 0; pc < kDim; pc += kKc) {
          const int64_t kc = std::min(kKc, kDim - pc);
          packA(a, lda, ic, mc, pc, kc, pa);
          for (int64_t p = jc; p < jEnd; ++p) {
            const float *bp = panelAt(packed, panels, pc, kc, p);
            const int64_t cols = std::min(kNr, nDim - p * kNr);
            float *cp = c + ic * ldc + p * kNr;
            for (int64_t ir = 0, rows; ir < mc; ir += rows) {
              rows = panelRows(mc, ir);
              tileOf(rows, kc, pa + ir * kc, bp, cp + ir * ldc, ldc, cols,
                     alpha, beta, pc == 0);
            }
          }
        }
      }
    }
  });
  return ok;
}

} // namespace tessel::runtime::cpu
