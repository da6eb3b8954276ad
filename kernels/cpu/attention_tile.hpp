// Tile primitives of the fused multi-scale attention (kernels/cpu/hkt_attention.cpp;
// also used by local_attention.cpp and htransformer.cpp): the small matrix
// product, row maximum and exponential, the 2x upsampling that carries a
// coarse level's scores to the next finer grid, the 2 x 2 block sums that
// carry gradients back, and a transpose. Portable templates here; float32
// versions with AVX2 + FMA chosen at run time live in attention.cpp (the
// product takes eight rows at a time in 512-bit registers where the CPU has
// AVX-512: each element the same FMA chain, so the same bits).
//
// Size rules (guaranteed by the tiling; the AVX2 paths rely on them): every
// row length n is a multiple of 8 and every row count m is even; upsampled
// grids have at least 8 coarse columns; block-summed grids have at least 16
// fine columns.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace hkt::cpu::attn_detail {

// c[m][n] (= or +=) a[m][K] (row stride lda) * b[K][n] (row stride ldb); AT: a is [K][lda] and
// its transpose the left operand (column i of a is row i).
template <bool AT, class T>
void mm_generic_t(const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc, int64_t m, int64_t n,
                  int64_t K, bool acc) {
  for (int64_t i = 0; i < m; ++i) {
    T* ci = c + i * ldc;
    if (!acc) std::fill_n(ci, n, T(0));
    for (int64_t k = 0; k < K; ++k) {
      const T av = AT ? a[k * lda + i] : a[i * lda + k];
      const T* bk = b + k * ldb;
      for (int64_t j = 0; j < n; ++j) ci[j] += av * bk[j];
    }
  }
}
template <class T>
T row_max_generic(const T* x, int64_t n) {
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < n; ++j) m = std::max(m, x[j]);
  return m;
}

// x[j] = exp(x[j] - sub); returns the sum.
template <class T>
T exp_shift_generic(T* x, int64_t n, T sub) {
  T s = 0;
  for (int64_t j = 0; j < n; ++j) {
    x[j] = std::exp(x[j] - sub);
    s += x[j];
  }
  return s;
}

// fine[i][j] = w * raw[i][j] + coarse[i / 2][j / 2] for i < 2 mr, j < 2 nc
// (raw may be fine itself).
template <class T>
void up2_generic(T* fine, int64_t ldf, const T* raw, int64_t ldr, const T* coarse, int64_t ldc, int64_t mr,
                 int64_t nc, T w) {
  for (int64_t i = 0; i < 2 * mr; ++i) {
    const T* cr = coarse + (i >> 1) * ldc;
    for (int64_t j = 0; j < 2 * nc; ++j) fine[i * ldf + j] = w * raw[i * ldr + j] + cr[j >> 1];
  }
}

// coarse[r][c] = sum of fine[2r..2r+1][2c..2c+1] for r < mr, c < nc.
template <class T>
void bs2_generic(T* coarse, int64_t ldc, const T* fine, int64_t ldf, int64_t mr, int64_t nc) {
  for (int64_t r = 0; r < mr; ++r) {
    const T* f0 = fine + 2 * r * ldf;
    const T* f1 = f0 + ldf;
    for (int64_t c = 0; c < nc; ++c) coarse[r * ldc + c] = (f0[2 * c] + f0[2 * c + 1]) + (f1[2 * c] + f1[2 * c + 1]);
  }
}

// g[j] = p[j] * (g[j] - d): the softmax backward on one row (g holds dP).
template <class T>
void dsoftmax_generic(const T* p, T* g, int64_t n, T d) {
  for (int64_t j = 0; j < n; ++j) g[j] = p[j] * (g[j] - d);
}

// sum_j a[j] b[j]
template <class T>
T dot_generic(const T* a, const T* b, int64_t n) {
  T s = 0;
  for (int64_t j = 0; j < n; ++j) s += a[j] * b[j];
  return s;
}

// dst[j][i] = src[i][j] for i < m, j < n (any sizes).
template <class T>
void tr_generic(T* dst, int64_t ldd, const T* src, int64_t lds, int64_t m, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) dst[j * ldd + i] = src[i * lds + j];
}

// float32 versions (attention.cpp): AVX2 + FMA when the CPU has them.
void mm_f32(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t m, int64_t n,
            int64_t K, bool acc);
void mm_at_f32(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t m,
               int64_t n, int64_t K, bool acc);
float row_max_f32(const float* x, int64_t n);
float exp_shift_f32(float* x, int64_t n, float sub);
void up2_f32(float* fine, int64_t ldf, const float* raw, int64_t ldr, const float* coarse, int64_t ldc, int64_t mr,
             int64_t nc, float w);
void bs2_f32(float* coarse, int64_t ldc, const float* fine, int64_t ldf, int64_t mr, int64_t nc);
void dsoftmax_f32(const float* p, float* g, int64_t n, float d);
float dot_f32(const float* a, const float* b, int64_t n);
void tr_f32(float* dst, int64_t ldd, const float* src, int64_t lds, int64_t m, int64_t n);  // AVX2 if m, n % 8 == 0

template <class T>
inline constexpr bool kIsF32 = std::is_same_v<T, float>;

// c (= or +=) a b (AT: a^T b): the float32 kernels, or the portable product.
template <bool AT, class T>
void mm_t(const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc, int64_t m, int64_t n, int64_t K,
          bool acc) {
  if constexpr (kIsF32<T>)
    (AT ? mm_at_f32 : mm_f32)(a, lda, b, ldb, c, ldc, m, n, K, acc);
  else
    mm_generic_t<AT>(a, lda, b, ldb, c, ldc, m, n, K, acc);
}
template <class T>
void mm(const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc, int64_t m, int64_t n, int64_t K,
        bool acc) {
  mm_t<false>(a, lda, b, ldb, c, ldc, m, n, K, acc);
}
template <class T>
void mm_at(const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc, int64_t m, int64_t n, int64_t K,
           bool acc) {
  mm_t<true>(a, lda, b, ldb, c, ldc, m, n, K, acc);
}
template <class T>
T row_max(const T* x, int64_t n) {
  if constexpr (kIsF32<T>)
    return row_max_f32(x, n);
  else
    return row_max_generic(x, n);
}
template <class T>
T exp_shift(T* x, int64_t n, T sub) {
  if constexpr (kIsF32<T>)
    return exp_shift_f32(x, n, sub);
  else
    return exp_shift_generic(x, n, sub);
}
template <class T>
void up2(T* fine, int64_t ldf, const T* raw, int64_t ldr, const T* coarse, int64_t ldc, int64_t mr, int64_t nc, T w) {
  if constexpr (kIsF32<T>)
    up2_f32(fine, ldf, raw, ldr, coarse, ldc, mr, nc, w);
  else
    up2_generic(fine, ldf, raw, ldr, coarse, ldc, mr, nc, w);
}
template <class T>
void bs2(T* coarse, int64_t ldc, const T* fine, int64_t ldf, int64_t mr, int64_t nc) {
  if constexpr (kIsF32<T>)
    bs2_f32(coarse, ldc, fine, ldf, mr, nc);
  else
    bs2_generic(coarse, ldc, fine, ldf, mr, nc);
}
template <class T>
void dsoftmax(const T* p, T* g, int64_t n, T d) {
  if constexpr (kIsF32<T>)
    dsoftmax_f32(p, g, n, d);
  else
    dsoftmax_generic(p, g, n, d);
}
template <class T>
T dot(const T* a, const T* b, int64_t n) {
  if constexpr (kIsF32<T>)
    return dot_f32(a, b, n);
  else
    return dot_generic(a, b, n);
}

template <class T>
void tr(T* dst, int64_t ldd, const T* src, int64_t lds, int64_t m, int64_t n) {
  if constexpr (kIsF32<T>)
    tr_f32(dst, ldd, src, lds, m, n);
  else
    tr_generic(dst, ldd, src, lds, m, n);
}

}  // namespace hkt::cpu::attn_detail
