// The tile products of the H-Transformer-1D kernel (htransformer.cpp):
// c[m][n] (= or +=) a b (mm) or a^T b (mm_at: a is [K][lda], so P and dS
// are read in place, never transposed). Portable templates; float32
// versions with AVX2 + FMA chosen at run time, six rows of c at a time, or
// eight where the CPU has AVX-512VL (its 32 registers hold 16 accumulators;
// the instructions and the order of every sum stay those of the six-row
// kernels, so the bits are the same). Size rules: m even, n a multiple of 8.
#pragma once
#include <algorithm>
#include <cstdint>

#include "kernels/cpu/attention_tile.hpp"
#include "kernels/cpu/htransformer_simd.hpp"

namespace hkt::cpu::htr {

// c[m][n] (= or +=) sum_k a[k][i] b[k][j]: a is [K][lda], its transpose the left operand.
template <class T>
void mm_at_generic(const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc, int64_t m, int64_t n,
                   int64_t K, bool acc) {
  for (int64_t i = 0; i < m; ++i) {
    T* ci = c + i * ldc;
    if (!acc) std::fill_n(ci, n, T(0));
    for (int64_t k = 0; k < K; ++k) {
      const T av = a[k * lda + i];
      const T* bk = b + k * ldb;
      for (int64_t j = 0; j < n; ++j) ci[j] += av * bk[j];
    }
  }
}

#ifdef HKT_CPU_AVX2
namespace avx2 {

// R rows of c (R <= 6) from R columns of a: 16 columns of c at a time, then 8.
template <int R>
__attribute__((target("avx2,fma"))) inline void mm_at_rows(const float* a, int64_t lda, const float* b, int64_t ldb,
                                                           float* c, int64_t ldc, int64_t n, int64_t K, bool acc) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    __m256 x[R][2];
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      x[r][0] = acc ? _mm256_loadu_ps(c + r * ldc + j) : _mm256_setzero_ps();
      x[r][1] = acc ? _mm256_loadu_ps(c + r * ldc + j + 8) : _mm256_setzero_ps();
    }
    const float *bj = b + j, *ak = a;
    for (int64_t k = 0; k < K; ++k, bj += ldb, ak += lda) {
      const __m256 b0 = _mm256_loadu_ps(bj), b1 = _mm256_loadu_ps(bj + 8);
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        const __m256 av = _mm256_broadcast_ss(ak + r);
        x[r][0] = _mm256_fmadd_ps(av, b0, x[r][0]);
        x[r][1] = _mm256_fmadd_ps(av, b1, x[r][1]);
      }
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      _mm256_storeu_ps(c + r * ldc + j, x[r][0]);
      _mm256_storeu_ps(c + r * ldc + j + 8, x[r][1]);
    }
  }
  for (; j < n; j += 8) {
    __m256 x[R];
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) x[r] = acc ? _mm256_loadu_ps(c + r * ldc + j) : _mm256_setzero_ps();
    const float *bj = b + j, *ak = a;
    for (int64_t k = 0; k < K; ++k, bj += ldb, ak += lda) {
      const __m256 b0 = _mm256_loadu_ps(bj);
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) x[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(ak + r), b0, x[r]);
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) _mm256_storeu_ps(c + r * ldc + j, x[r]);
  }
}

__attribute__((target("avx2,fma"))) inline void mm_at(const float* a, int64_t lda, const float* b, int64_t ldb,
                                                      float* c, int64_t ldc, int64_t m, int64_t n, int64_t K,
                                                      bool acc) {
  int64_t i = 0;
  for (; i + 6 <= m; i += 6) mm_at_rows<6>(a + i, lda, b, ldb, c + i * ldc, ldc, n, K, acc);
  if (m - i == 4) mm_at_rows<4>(a + i, lda, b, ldb, c + i * ldc, ldc, n, K, acc);
  if (m - i == 2) mm_at_rows<2>(a + i, lda, b, ldb, c + i * ldc, ldc, n, K, acc);
}

}  // namespace avx2

// Eight rows of c at a time where the CPU has AVX-512VL: 16 accumulators need its 32 vector
// registers (the instructions stay 256-bit AVX2 + FMA, with the same sums in the same order as
// the six-row kernels, so the same bits). The rest of m (even) goes to the six-row kernels.
namespace avx512 {

inline bool has() {
  static const bool h = simd::cpu_has_avx2_fma() && __builtin_cpu_supports("avx512f") &&
                        __builtin_cpu_supports("avx512vl");
  return h;
}

// c[8][n] (= or +=) a^T b: a is [K][lda], its columns the rows of the left operand.
__attribute__((target("avx2,fma,avx512f,avx512vl"))) inline void rows8_at(const float* a, int64_t lda, const float* b,
                                                                      int64_t ldb, float* c, int64_t ldc, int64_t n,
                                                                      int64_t K, bool acc) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    __m256 x[8][2];
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r) {
      x[r][0] = acc ? _mm256_loadu_ps(c + r * ldc + j) : _mm256_setzero_ps();
      x[r][1] = acc ? _mm256_loadu_ps(c + r * ldc + j + 8) : _mm256_setzero_ps();
    }
    const float* bj = b + j;
    for (int64_t k = 0; k < K; ++k, bj += ldb) {
      const __m256 b0 = _mm256_loadu_ps(bj), b1 = _mm256_loadu_ps(bj + 8);
#pragma GCC unroll 8
      for (int r = 0; r < 8; ++r) {
        const __m256 av = _mm256_broadcast_ss(a + k * lda + r);
        x[r][0] = _mm256_fmadd_ps(av, b0, x[r][0]);
        x[r][1] = _mm256_fmadd_ps(av, b1, x[r][1]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r) {
      _mm256_storeu_ps(c + r * ldc + j, x[r][0]);
      _mm256_storeu_ps(c + r * ldc + j + 8, x[r][1]);
    }
  }
  for (; j < n; j += 8) {
    __m256 x[8];
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r) x[r] = acc ? _mm256_loadu_ps(c + r * ldc + j) : _mm256_setzero_ps();
    const float* bj = b + j;
    for (int64_t k = 0; k < K; ++k, bj += ldb) {
      const __m256 b0 = _mm256_loadu_ps(bj);
#pragma GCC unroll 8
      for (int r = 0; r < 8; ++r)
        x[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(a + k * lda + r), b0, x[r]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r) _mm256_storeu_ps(c + r * ldc + j, x[r]);
  }
}

}  // namespace avx512
#endif

// The tile products: c[m][n] (= or +=) a b (mm: the fused attention's, attention_tile.hpp) or a^T b
// (mm_at, a [K][lda]); m even, n % 8 == 0.
using attn_detail::mm;
template <class T>
void mm_at(const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc, int64_t m, int64_t n, int64_t K,
           bool acc) {
#ifdef HKT_CPU_AVX2
  if constexpr (attn_detail::kIsF32<T>) {
    if (avx512::has()) {
      int64_t i = 0;
      for (; i + 8 <= m; i += 8) avx512::rows8_at(a + i, lda, b, ldb, c + i * ldc, ldc, n, K, acc);
      if (i < m) avx2::mm_at(a + i, lda, b, ldb, c + i * ldc, ldc, m - i, n, K, acc);
      return;
    }
    if (use_avx2<T>()) return avx2::mm_at(a, lda, b, ldb, c, ldc, m, n, K, acc);
  }
#endif
  mm_at_generic(a, lda, b, ldb, c, ldc, m, n, K, acc);
}

}  // namespace hkt::cpu::htr
