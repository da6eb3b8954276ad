// float32 tile primitives of the fused attention (kernels/cpu/attention_tile.hpp):
// the small matrix product, row maximum and exponential, 2x upsampling, 2 x 2
// block sums, the softmax backward row, a dot product and a transpose, with AVX2 + FMA versions
// chosen at run time when the CPU has them (the library is built for
// x86-64-v2), and portable versions otherwise. Results are bitwise the same
// for any number of threads; they may differ between CPUs with and without
// FMA.
#include "kernels/cpu/attention_tile.hpp"
#include "kernels/cpu/avx2_math.hpp"

#ifdef HKT_CPU_AVX2
#define HKT_ATTN_AVX2 1
#endif

namespace hkt::cpu::attn_detail {
namespace {

#ifdef HKT_ATTN_AVX2
using simd::cpu_has_avx2_fma;
using simd::exp8;
using simd::hsum8;


// One block of R rows of c: 16 columns at a time (2R accumulators), then 8.
// With R = 6 the 12 accumulators hide the FMA latency in AVX2's 16
// registers; with AVX-512, mm_rows_zmm runs the rows in 512-bit registers and
// this body only for the last 8 columns (the same FMA chain per element, so the same bits).
// AT: a is [K][lda] and its transpose the left operand (row r of c reads column r of a).
template <int R, bool AT = false>
__attribute__((target("avx2,fma"), always_inline)) inline void mm_rows_avx2(const float* a, int64_t lda,
                                                                           const float* b, int64_t ldb, float* c,
                                                                           int64_t ldc, int64_t n, int64_t K,
                                                                           bool acc) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    __m256 x[R][2];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      x[r][0] = acc ? _mm256_loadu_ps(c + r * ldc + j) : _mm256_setzero_ps();
      x[r][1] = acc ? _mm256_loadu_ps(c + r * ldc + j + 8) : _mm256_setzero_ps();
    }
    const float* bj = b + j;
    for (int64_t k = 0; k < K; ++k, bj += ldb) {
      const __m256 b0 = _mm256_loadu_ps(bj), b1 = _mm256_loadu_ps(bj + 8);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m256 av = _mm256_broadcast_ss(AT ? a + k * lda + r : a + r * lda + k);
        x[r][0] = _mm256_fmadd_ps(av, b0, x[r][0]);
        x[r][1] = _mm256_fmadd_ps(av, b1, x[r][1]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      _mm256_storeu_ps(c + r * ldc + j, x[r][0]);
      _mm256_storeu_ps(c + r * ldc + j + 8, x[r][1]);
    }
  }
  for (; j < n; j += 8) {
    __m256 x[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) x[r] = acc ? _mm256_loadu_ps(c + r * ldc + j) : _mm256_setzero_ps();
    const float* bj = b + j;
    for (int64_t k = 0; k < K; ++k, bj += ldb) {
      const __m256 b0 = _mm256_loadu_ps(bj);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
        x[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(AT ? a + k * lda + r : a + r * lda + k), b0, x[r]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) _mm256_storeu_ps(c + r * ldc + j, x[r]);
  }
}

// n % 8 == 0, m even. Block i of rows starts at row i of a (AT: at column i).
template <bool AT>
__attribute__((target("avx2,fma"))) void mm_f32_avx2(const float* a, int64_t lda, const float* b, int64_t ldb,
                                                     float* c, int64_t ldc, int64_t m, int64_t n, int64_t K,
                                                     bool acc) {
  const int64_t step = AT ? 1 : lda;
  int64_t i = 0;
  for (; i + 6 <= m; i += 6) mm_rows_avx2<6, AT>(a + i * step, lda, b, ldb, c + i * ldc, ldc, n, K, acc);
  if (m - i == 4) mm_rows_avx2<4, AT>(a + i * step, lda, b, ldb, c + i * ldc, ldc, n, K, acc);
  if (m - i == 2) mm_rows_avx2<2, AT>(a + i * step, lda, b, ldb, c + i * ldc, ldc, n, K, acc);
}

// R rows of c at a time where the CPU has AVX-512 (R = 8 for the bulk, 6, 4 or 2 for the last rows of a
// block): 32 columns in two 512-bit registers a row (2R accumulators of AVX-512's 32), then 16, then
// the last 8 in the AVX2 body. Every element of c is the same chain of FMAs over k as in the AVX2
// body, so the bits are the same; a 512-bit FMA does the work of two 256-bit ones (on AMD Zen 5, one
// thread: the tile products 1.8-2x faster).
template <int R, int W, bool AT>
__attribute__((target("avx2,fma,avx512f,avx512vl"), always_inline)) inline void mm_rows_zmm_w(
    const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t K, bool acc) {
  __m512 x[R][W];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int w = 0; w < W; ++w) x[r][w] = acc ? _mm512_loadu_ps(c + r * ldc + 16 * w) : _mm512_setzero_ps();
  const float* bk = b;
  for (int64_t k = 0; k < K; ++k, bk += ldb) {
    __m512 bv[W];
#pragma GCC unroll 2
    for (int w = 0; w < W; ++w) bv[w] = _mm512_loadu_ps(bk + 16 * w);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(AT ? a[k * lda + r] : a[r * lda + k]);
#pragma GCC unroll 2
      for (int w = 0; w < W; ++w) x[r][w] = _mm512_fmadd_ps(av, bv[w], x[r][w]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int w = 0; w < W; ++w) _mm512_storeu_ps(c + r * ldc + 16 * w, x[r][w]);
}
template <int R, bool AT>
__attribute__((target("avx2,fma,avx512f,avx512vl"))) void mm_rows_zmm(const float* a, int64_t lda, const float* b,
                                                                     int64_t ldb, float* c, int64_t ldc, int64_t n,
                                                                     int64_t K, bool acc) {
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) mm_rows_zmm_w<R, 2, AT>(a, lda, b + j, ldb, c + j, ldc, K, acc);
  if (j + 16 <= n) mm_rows_zmm_w<R, 1, AT>(a, lda, b + j, ldb, c + j, ldc, K, acc), j += 16;
  if (j < n) mm_rows_avx2<R, AT>(a, lda, b + j, ldb, c + j, ldc, n - j, K, acc);
}
template <bool AT>
void mm_f32_avx512vl(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t m,
                     int64_t n, int64_t K, bool acc) {
  const int64_t step = AT ? 1 : lda;
  int64_t i = 0;
  for (; i + 8 <= m; i += 8) mm_rows_zmm<8, AT>(a + i * step, lda, b, ldb, c + i * ldc, ldc, n, K, acc);
  const float* ai = a + i * step;
  float* ci = c + i * ldc;
  switch (m - i) {  // m is even
    case 6: return mm_rows_zmm<6, AT>(ai, lda, b, ldb, ci, ldc, n, K, acc);
    case 4: return mm_rows_zmm<4, AT>(ai, lda, b, ldb, ci, ldc, n, K, acc);
    case 2: return mm_rows_zmm<2, AT>(ai, lda, b, ldb, ci, ldc, n, K, acc);
    default: return;
  }
}


// As exp_shift_f32_avx2, 16 exponentials per instruction: the sum still adds the 8-lane halves in
// the AVX2 order (j, then j + 8), so the same bits. (The pragma: GCC 12's false warning on the
// AVX-512 intrinsics, avx2_math.hpp's exp16.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx2,fma,avx512f"))) float exp_shift_f32_avx512(float* x, int64_t n, float sub) {
  __m256 s = _mm256_setzero_ps();
  int64_t j = 0;
  const __m512 vs16 = _mm512_set1_ps(sub);
  for (; j + 16 <= n; j += 16) {
    const __m512 e = simd::exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j), vs16));
    _mm512_storeu_ps(x + j, e);
    s = _mm256_add_ps(s, _mm512_castps512_ps256(e));
    s = _mm256_add_ps(s, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1)));
  }
  if (j < n) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), _mm256_set1_ps(sub)));
    _mm256_storeu_ps(x + j, e);
    s = _mm256_add_ps(s, e);
  }
  return hsum8(s);
}
#pragma GCC diagnostic pop

__attribute__((target("avx2,fma"))) float exp_shift_f32_avx2(float* x, int64_t n, float sub) {
  __m256 s = _mm256_setzero_ps();
  const __m256 vs = _mm256_set1_ps(sub);
  for (int64_t j = 0; j < n; j += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), vs));
    _mm256_storeu_ps(x + j, e);
    s = _mm256_add_ps(s, e);
  }
  return hsum8(s);
}

__attribute__((target("avx2,fma"))) float row_max_f32_avx2(const float* x, int64_t n) {
  __m256 m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t j = 0; j < n; j += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + j));
  alignas(32) float t[8];
  _mm256_store_ps(t, m);
  return std::max(std::max(std::max(t[0], t[1]), std::max(t[2], t[3])),
                  std::max(std::max(t[4], t[5]), std::max(t[6], t[7])));
}

// Four coarse values (a b c d) -> eight fine ones (a a b b c c d d).
__attribute__((target("avx2,fma"))) inline __m256 dup4(const float* p) {
  return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(p)), _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
}

// nc % 4 == 0
__attribute__((target("avx2,fma"))) void up2_f32_avx2(float* fine, int64_t ldf, const float* raw, int64_t ldr,
                                                      const float* coarse, int64_t ldc, int64_t mr, int64_t nc,
                                                      float w) {
  const __m256 vw = _mm256_set1_ps(w);
  for (int64_t r = 0; r < mr; ++r) {
    const float* cr = coarse + r * ldc;
    float* f0 = fine + 2 * r * ldf;
    float* f1 = f0 + ldf;
    const float* r0 = raw + 2 * r * ldr;
    const float* r1 = r0 + ldr;
    for (int64_t c = 0; c < nc; c += 4) {
      const __m256 u = dup4(cr + c);
      _mm256_storeu_ps(f0 + 2 * c, _mm256_fmadd_ps(vw, _mm256_loadu_ps(r0 + 2 * c), u));
      _mm256_storeu_ps(f1 + 2 * c, _mm256_fmadd_ps(vw, _mm256_loadu_ps(r1 + 2 * c), u));
    }
  }
}

// nc % 8 == 0
__attribute__((target("avx2,fma"))) void bs2_f32_avx2(float* coarse, int64_t ldc, const float* fine, int64_t ldf,
                                                      int64_t mr, int64_t nc) {
  for (int64_t r = 0; r < mr; ++r) {
    const float* f0 = fine + 2 * r * ldf;
    const float* f1 = f0 + ldf;
    float* cr = coarse + r * ldc;
    for (int64_t c = 0; c < nc; c += 8) {
      const __m256 v0 = _mm256_add_ps(_mm256_loadu_ps(f0 + 2 * c), _mm256_loadu_ps(f1 + 2 * c));
      const __m256 v1 = _mm256_add_ps(_mm256_loadu_ps(f0 + 2 * c + 8), _mm256_loadu_ps(f1 + 2 * c + 8));
      // hadd gives (v0 01, v0 23, v1 01, v1 23 | v0 45, v0 67, v1 45, v1 67); reorder the 64-bit pairs.
      const __m256 h = _mm256_hadd_ps(v0, v1);
      _mm256_storeu_ps(cr + c, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(h), 0xD8)));
    }
  }
}

__attribute__((target("avx2,fma"))) void dsoftmax_f32_avx2(const float* p, float* g, int64_t n, float d) {
  const __m256 vd = _mm256_set1_ps(d);
  for (int64_t j = 0; j < n; j += 8)
    _mm256_storeu_ps(g + j, _mm256_mul_ps(_mm256_loadu_ps(p + j), _mm256_sub_ps(_mm256_loadu_ps(g + j), vd)));
}

// m % 8 == 0, n % 8 == 0: 8 x 8 blocks transposed in registers.
__attribute__((target("avx2,fma"))) void tr_f32_avx2(float* dst, int64_t ldd, const float* src, int64_t lds,
                                                     int64_t m, int64_t n) {
  for (int64_t i = 0; i < m; i += 8)
    for (int64_t j = 0; j < n; j += 8) {
      __m256 r[8], t[8];
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(src + (i + k) * lds + j);
#pragma GCC unroll 4
      for (int k = 0; k < 8; k += 2) {
        t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
        t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
      }
      for (int k = 0; k < 8; k += 4) {
        r[k] = _mm256_shuffle_ps(t[k], t[k + 2], 0x44);
        r[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], 0xEE);
        r[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0x44);
        r[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0xEE);
      }
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        _mm256_storeu_ps(dst + (j + k) * ldd + i, _mm256_permute2f128_ps(r[k], r[k + 4], 0x20));
        _mm256_storeu_ps(dst + (j + k + 4) * ldd + i, _mm256_permute2f128_ps(r[k], r[k + 4], 0x31));
      }
    }
}

__attribute__((target("avx2,fma"))) float dot_f32_avx2(const float* a, const float* b, int64_t n) {
  __m256 s = _mm256_setzero_ps();
  for (int64_t j = 0; j < n; j += 8) s = _mm256_fmadd_ps(_mm256_loadu_ps(a + j), _mm256_loadu_ps(b + j), s);
  return hsum8(s);
}
#endif

}  // namespace

// The float32 products: eight rows at a time with AVX-512 (512-bit registers), six with AVX2 + FMA, else portable.
template <bool AT>
void mm_f32_any(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t m,
                int64_t n, int64_t K, bool acc) {
#ifdef HKT_ATTN_AVX2
  if (simd::cpu_has_avx512vl()) return mm_f32_avx512vl<AT>(a, lda, b, ldb, c, ldc, m, n, K, acc);
  if (cpu_has_avx2_fma()) return mm_f32_avx2<AT>(a, lda, b, ldb, c, ldc, m, n, K, acc);
#endif
  mm_generic_t<AT>(a, lda, b, ldb, c, ldc, m, n, K, acc);
}

void mm_f32(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t m, int64_t n,
            int64_t K, bool acc) {
  mm_f32_any<false>(a, lda, b, ldb, c, ldc, m, n, K, acc);
}

void mm_at_f32(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t m, int64_t n,
               int64_t K, bool acc) {
  mm_f32_any<true>(a, lda, b, ldb, c, ldc, m, n, K, acc);
}

float exp_shift_f32(float* x, int64_t n, float sub) {
#ifdef HKT_ATTN_AVX2
  if (simd::cpu_has_avx512f()) return exp_shift_f32_avx512(x, n, sub);
  if (cpu_has_avx2_fma()) return exp_shift_f32_avx2(x, n, sub);
#endif
  return exp_shift_generic(x, n, sub);
}

float row_max_f32(const float* x, int64_t n) {
#ifdef HKT_ATTN_AVX2
  if (cpu_has_avx2_fma()) return row_max_f32_avx2(x, n);
#endif
  return row_max_generic(x, n);
}

void up2_f32(float* fine, int64_t ldf, const float* raw, int64_t ldr, const float* coarse, int64_t ldc, int64_t mr,
             int64_t nc, float w) {
#ifdef HKT_ATTN_AVX2
  if (cpu_has_avx2_fma()) return up2_f32_avx2(fine, ldf, raw, ldr, coarse, ldc, mr, nc, w);
#endif
  up2_generic(fine, ldf, raw, ldr, coarse, ldc, mr, nc, w);
}

void bs2_f32(float* coarse, int64_t ldc, const float* fine, int64_t ldf, int64_t mr, int64_t nc) {
#ifdef HKT_ATTN_AVX2
  if (cpu_has_avx2_fma()) return bs2_f32_avx2(coarse, ldc, fine, ldf, mr, nc);
#endif
  bs2_generic(coarse, ldc, fine, ldf, mr, nc);
}

void dsoftmax_f32(const float* p, float* g, int64_t n, float d) {
#ifdef HKT_ATTN_AVX2
  if (cpu_has_avx2_fma()) return dsoftmax_f32_avx2(p, g, n, d);
#endif
  dsoftmax_generic(p, g, n, d);
}

void tr_f32(float* dst, int64_t ldd, const float* src, int64_t lds, int64_t m, int64_t n) {
#ifdef HKT_ATTN_AVX2
  if (m % 8 == 0 && n % 8 == 0 && cpu_has_avx2_fma()) return tr_f32_avx2(dst, ldd, src, lds, m, n);
#endif
  tr_generic(dst, ldd, src, lds, m, n);
}

float dot_f32(const float* a, const float* b, int64_t n) {
#ifdef HKT_ATTN_AVX2
  if (cpu_has_avx2_fma()) return dot_f32_avx2(a, b, n);
#endif
  return dot_generic(a, b, n);
}

}  // namespace hkt::cpu::attn_detail
