// float32 inner loops of the fused attention (kernels/cpu/attention.hpp):
// the small matrix product and the row exponential, with AVX2 + FMA versions
// chosen at run time when the CPU has them (the library is built for
// x86-64-v2), and portable versions otherwise. Results are bitwise the same
// for any number of threads; they may differ between CPUs with and without
// FMA.
#include "kernels/cpu/attention.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HKT_ATTN_AVX2 1
#endif

namespace hkt::cpu::attn_detail {
namespace {

#ifdef HKT_ATTN_AVX2
bool cpu_has_avx2_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

__attribute__((target("avx2,fma"))) void mm_f32_avx2(const float* a, int64_t lda, const float* b, int64_t ldb,
                                                     float* c, int64_t ldc, int64_t m, int64_t n, int64_t K,
                                                     bool acc) {
  for (int64_t i = 0; i < m; i += 4) {
    const float* a0 = a + i * lda;
    const float* a1 = a0 + lda;
    const float* a2 = a1 + lda;
    const float* a3 = a2 + lda;
    float* c0 = c + i * ldc;
    float* c1 = c0 + ldc;
    float* c2 = c1 + ldc;
    float* c3 = c2 + ldc;
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
      __m256 x00, x01, x10, x11, x20, x21, x30, x31;
      if (acc) {
        x00 = _mm256_loadu_ps(c0 + j), x01 = _mm256_loadu_ps(c0 + j + 8);
        x10 = _mm256_loadu_ps(c1 + j), x11 = _mm256_loadu_ps(c1 + j + 8);
        x20 = _mm256_loadu_ps(c2 + j), x21 = _mm256_loadu_ps(c2 + j + 8);
        x30 = _mm256_loadu_ps(c3 + j), x31 = _mm256_loadu_ps(c3 + j + 8);
      } else {
        x00 = x01 = x10 = x11 = x20 = x21 = x30 = x31 = _mm256_setzero_ps();
      }
      const float* bj = b + j;
      for (int64_t k = 0; k < K; ++k, bj += ldb) {
        const __m256 b0 = _mm256_loadu_ps(bj), b1 = _mm256_loadu_ps(bj + 8);
        __m256 av = _mm256_broadcast_ss(a0 + k);
        x00 = _mm256_fmadd_ps(av, b0, x00);
        x01 = _mm256_fmadd_ps(av, b1, x01);
        av = _mm256_broadcast_ss(a1 + k);
        x10 = _mm256_fmadd_ps(av, b0, x10);
        x11 = _mm256_fmadd_ps(av, b1, x11);
        av = _mm256_broadcast_ss(a2 + k);
        x20 = _mm256_fmadd_ps(av, b0, x20);
        x21 = _mm256_fmadd_ps(av, b1, x21);
        av = _mm256_broadcast_ss(a3 + k);
        x30 = _mm256_fmadd_ps(av, b0, x30);
        x31 = _mm256_fmadd_ps(av, b1, x31);
      }
      _mm256_storeu_ps(c0 + j, x00), _mm256_storeu_ps(c0 + j + 8, x01);
      _mm256_storeu_ps(c1 + j, x10), _mm256_storeu_ps(c1 + j + 8, x11);
      _mm256_storeu_ps(c2 + j, x20), _mm256_storeu_ps(c2 + j + 8, x21);
      _mm256_storeu_ps(c3 + j, x30), _mm256_storeu_ps(c3 + j + 8, x31);
    }
    for (; j < n; j += 8) {
      __m256 x0, x1, x2, x3;
      if (acc) {
        x0 = _mm256_loadu_ps(c0 + j), x1 = _mm256_loadu_ps(c1 + j);
        x2 = _mm256_loadu_ps(c2 + j), x3 = _mm256_loadu_ps(c3 + j);
      } else {
        x0 = x1 = x2 = x3 = _mm256_setzero_ps();
      }
      const float* bj = b + j;
      for (int64_t k = 0; k < K; ++k, bj += ldb) {
        const __m256 b0 = _mm256_loadu_ps(bj);
        x0 = _mm256_fmadd_ps(_mm256_broadcast_ss(a0 + k), b0, x0);
        x1 = _mm256_fmadd_ps(_mm256_broadcast_ss(a1 + k), b0, x1);
        x2 = _mm256_fmadd_ps(_mm256_broadcast_ss(a2 + k), b0, x2);
        x3 = _mm256_fmadd_ps(_mm256_broadcast_ss(a3 + k), b0, x3);
      }
      _mm256_storeu_ps(c0 + j, x0), _mm256_storeu_ps(c1 + j, x1);
      _mm256_storeu_ps(c2 + j, x2), _mm256_storeu_ps(c3 + j, x3);
    }
  }
}

// exp(x) for 8 lanes (Cephes-style: 2^n * p(r), |error| ~ 2 ulp); exactly 0
// below -87.3 (so -inf gives 0) and clamped above 88.3.
__attribute__((target("avx2,fma"))) inline __m256 exp8(__m256 x) {
  const __m256 zero_mask = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_LT_OQ);
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
  const __m256 fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
  y = _mm256_mul_ps(y, _mm256_castsi256_ps(e));
  return _mm256_andnot_ps(zero_mask, y);
}

__attribute__((target("avx2,fma"))) float exp_shift_f32_avx2(float* x, int64_t n, float sub) {
  __m256 s = _mm256_setzero_ps();
  const __m256 vs = _mm256_set1_ps(sub);
  for (int64_t j = 0; j < n; j += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), vs));
    _mm256_storeu_ps(x + j, e);
    s = _mm256_add_ps(s, e);
  }
  alignas(32) float t[8];
  _mm256_store_ps(t, s);
  return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}
#endif

}  // namespace

void mm_f32(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t m, int64_t n,
            int64_t K, bool acc) {
#ifdef HKT_ATTN_AVX2
  if (cpu_has_avx2_fma()) return mm_f32_avx2(a, lda, b, ldb, c, ldc, m, n, K, acc);
#endif
  mm_generic(a, lda, b, ldb, c, ldc, m, n, K, acc);
}

float exp_shift_f32(float* x, int64_t n, float sub) {
#ifdef HKT_ATTN_AVX2
  if (cpu_has_avx2_fma()) return exp_shift_f32_avx2(x, n, sub);
#endif
  return exp_shift_generic(x, n, sub);
}

}  // namespace hkt::cpu::attn_detail
