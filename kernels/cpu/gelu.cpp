// float32 GELU (exact, erf form) on contiguous buffers with AVX2 + FMA, chosen
// at run time (kernels/cpu/elementwise.cpp calls these for ew::GeluErf).
//
// erf is the rational approximation XLA and Eigen use for float32
// (x P(x^2) / Q(x^2) on x clamped to [-4, 4]; a few ulp, checked against
// std::erf in tests/test_elementwise.cpp); exp is simd::exp8.
#include "kernels/cpu/gelu.hpp"

#include <cmath>

#include "hkt/kernels/elementwise_defs.hpp"
#include "kernels/cpu/avx2_math.hpp"
#include "kernels/cpu/parallel.hpp"

namespace hkt::cpu {
namespace {

#ifdef HKT_CPU_AVX2
__attribute__((target("avx2,fma"))) inline __m256 erf8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-4.0f)), _mm256_set1_ps(4.0f));
  const __m256 x2 = _mm256_mul_ps(x, x);
  __m256 p = _mm256_fmadd_ps(x2, _mm256_set1_ps(-2.72614225801306e-10f), _mm256_set1_ps(2.77068142495902e-08f));
  p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(-2.10102402082508e-06f));
  p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(-5.69250639462346e-05f));
  p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(-7.34990630326855e-04f));
  p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(-2.95459980854025e-03f));
  p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(-1.60960333262415e-02f));
  p = _mm256_mul_ps(x, p);
  __m256 q = _mm256_fmadd_ps(x2, _mm256_set1_ps(-1.45660718464996e-05f), _mm256_set1_ps(-2.13374055278905e-04f));
  q = _mm256_fmadd_ps(x2, q, _mm256_set1_ps(-1.68282697438203e-03f));
  q = _mm256_fmadd_ps(x2, q, _mm256_set1_ps(-7.37332916720468e-03f));
  q = _mm256_fmadd_ps(x2, q, _mm256_set1_ps(-1.42647390514189e-02f));
  return _mm256_div_ps(p, q);
}

// Phi(x) = 0.5 (1 + erf(x / sqrt 2))
__attribute__((target("avx2,fma"))) inline __m256 cdf8(__m256 x) {
  const __m256 half = _mm256_set1_ps(0.5f);
  return _mm256_fmadd_ps(half, erf8(_mm256_mul_ps(x, _mm256_set1_ps(0.7071067811865476f))), half);
}

__attribute__((target("avx2,fma"))) void gelu_avx2(const float* x, float* y, int64_t lo, int64_t hi) {
  int64_t i = lo;
  for (; i + 8 <= hi; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(v, cdf8(v)));
  }
  for (; i < hi; ++i) y[i] = ew::GeluErf::f(x[i]);
}

// gx = g (Phi(x) + x phi(x)), phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
__attribute__((target("avx2,fma"))) void gelu_grad_avx2(const float* x, const float* g, float* gx, int64_t lo,
                                                        int64_t hi) {
  int64_t i = lo;
  for (; i + 8 <= hi; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 pdf = _mm256_mul_ps(_mm256_set1_ps(0.3989422804014327f),
                                     simd::exp8(_mm256_mul_ps(_mm256_set1_ps(-0.5f), _mm256_mul_ps(v, v))));
    const __m256 d = _mm256_fmadd_ps(v, pdf, cdf8(v));
    _mm256_storeu_ps(gx + i, _mm256_mul_ps(_mm256_loadu_ps(g + i), d));
  }
  for (; i < hi; ++i) gx[i] = g[i] * ew::GeluErf::df(x[i], 0.0f);
}
#endif

}  // namespace

bool gelu_erf_f32(const float* x, float* y, int64_t n) {
#ifdef HKT_CPU_AVX2
  if (!simd::cpu_has_avx2_fma()) return false;
  parallel_for(0, n, kElementwiseGrain, [&](int64_t lo, int64_t hi) { gelu_avx2(x, y, lo, hi); });
  return true;
#else
  (void)x, (void)y, (void)n;
  return false;
#endif
}

bool gelu_erf_grad_f32(const float* x, const float* g, float* gx, int64_t n) {
#ifdef HKT_CPU_AVX2
  if (!simd::cpu_has_avx2_fma()) return false;
  parallel_for(0, n, kElementwiseGrain, [&](int64_t lo, int64_t hi) { gelu_grad_avx2(x, g, gx, lo, hi); });
  return true;
#else
  (void)x, (void)g, (void)gx, (void)n;
  return false;
#endif
}

}  // namespace hkt::cpu
