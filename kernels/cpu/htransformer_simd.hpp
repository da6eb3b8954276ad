// The per-tile passes of the H-Transformer-1D kernel (htransformer.cpp) with
// the elementwise work fused, one pass over the score tile each: the masks
// and bias, the forward's row softmax, the backward's softmax derivative
// with the bias gradient and the scale; the pyramid's row passes (the tile
// products are the fused attention's). Portable templates; float32
// versions with AVX2 + FMA chosen at run time (the library is built for
// x86-64-v2, so each carries its own target attribute).
//
// Size rules (the tile's): ld and every segment width nrp are multiples of 8.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/cpu/attention_tile.hpp"
#include "kernels/cpu/avx2_math.hpp"

namespace hkt::cpu::htr {

// The tile products: c (= or +=) a b, and a^T b with a [K][lda] (P and dS read in place, never
// transposed): the fused attention's (attention_tile.hpp).
using attn_detail::mm;
using attn_detail::mm_at;

// s[a][j] = s[a][j] scale + add[a][j] + cm[j] for a < nr, j < ld (add: the bias, -inf where masked;
// cm: 0, or -inf for a key with no valid token).
template <class T>
void mask_bias_generic(T* s, int64_t ld, int64_t nr, const T* add, const T* cm, T scale) {
  for (int64_t a = 0; a < nr; ++a) {
    T* r = s + a * ld;
    const T* ad = add + a * ld;
    for (int64_t j = 0; j < ld; ++j) r[j] = r[j] * scale + ad[j] + cm[j];
  }
}

// What the row passes below first apply to the raw products (mask_bias_generic).
template <class T>
struct Mask {
  const T *add, *cm;
  T scale;
};

// The forward's rows a < nr: s masked, then P = exp(s - m) in place with m the row max, M[a] = m
// and Z[a] = P . cp; a row with no key (m = -inf) is zeroed and leaves M, Z alone.
template <class T>
void softmax_rows_generic(T* s, int64_t ld, int64_t nr, const Mask<T>& mk, const T* cp, T* M, T* Z) {
  mask_bias_generic(s, ld, nr, mk.add, mk.cm, mk.scale);
  using namespace attn_detail;
  for (int64_t a = 0; a < nr; ++a) {
    T* r = s + a * ld;
    const T m = row_max_generic(r, ld);
    if (m == -std::numeric_limits<T>::infinity()) {
      std::fill_n(r, ld, T(0));
      continue;
    }
    exp_shift_generic(r, ld, m);
    M[a] = m, Z[a] = dot_generic(r, cp, ld);
  }
}

// The backward's rows a < nr: s masked, then P = exp(s + E[a]) in place, dS = P (g - cp D[a]); dacc (if not null)
// += dS per segment (partial sums in T; segment i, nrp columns, adds to the rows of dacc + kind[i] nr nrp, row a at
// a nrp), then g = scale dS. A row with E[a] = -inf (no live query) is zeroed in s and g.
template <class T>
void dsoftmax_rows_generic(T* s, T* g, int64_t ld, int64_t nr, int64_t nrp, const int* kind, const Mask<T>& mk,
                           const T* cp, const T* E, const T* D, T scale, T* dacc) {
  mask_bias_generic(s, ld, nr, mk.add, mk.cm, mk.scale);
  for (int64_t a = 0; a < nr; ++a) {
    T *r = s + a * ld, *gr = g + a * ld;
    if (E[a] == -std::numeric_limits<T>::infinity()) {
      std::fill_n(r, ld, T(0)), std::fill_n(gr, ld, T(0));
      continue;
    }
    const T e = E[a], da = D[a];
    for (int64_t j = 0; j < ld; ++j) {
      r[j] = std::exp(r[j] + e);
      const T ds = r[j] * (gr[j] - cp[j] * da);
      if (dacc) dacc[(kind[j / nrp] * nr + a) * nrp + j % nrp] += ds;
      gr[j] = ds * scale;
    }
  }
}

// x[j] = exp(x[j]) for j < n (the merge weights of the levels).
template <class T>
void exp_batch_generic(T* x, int64_t n) {
  for (int64_t j = 0; j < n; ++j) x[j] = std::exp(x[j]);
}

// out[p] = (in[2p] + in[2p + 1]) inv[p] (inv null: the sum) for p < n: a row of the transposed
// pyramid from the finer level's.
template <class T>
void pair_sums_generic(T* out, const T* in, int64_t n, const T* inv) {
  for (int64_t p = 0; p < n; ++p) out[p] = inv ? (in[2 * p] + in[2 * p + 1]) * inv[p] : in[2 * p] + in[2 * p + 1];
}

// Row passes of the pyramid, w columns per row (row stride w): bodies inlined into a portable
// and an AVX2 copy each (the library builds with -ffp-contract=off: the same operations, so
// the same bits, at any vector width).
#define HTR_INLINE inline __attribute__((always_inline))

// out[p] = (in[2p] + in[2p + 1]) inv[p] for p < n (inv null: the sum; first: in[2p] alone).
template <class T>
HTR_INLINE void pair_rows_body(T* __restrict out, const T* __restrict in, int64_t n, int64_t w, const T* inv,
                               bool first) {
  for (int64_t p = 0; p < n; ++p) {
    const T *__restrict a = in + 2 * p * w, *__restrict z = a + w;
    T* __restrict o = out + p * w;
    if (first)
      for (int64_t e = 0; e < w; ++e) o[e] = a[e];
    else if (inv)
      for (int64_t e = 0; e < w; ++e) o[e] = (a[e] + z[e]) * inv[p];
    else
      for (int64_t e = 0; e < w; ++e) o[e] = a[e] + z[e];
  }
}

// fine[2p] = coarse[p] inv[p] and fine[2p + 1] likewise for p < n (inv null: no product; first:
// fine[2p + 1] = 0): the coarsening transposed, the start of the finer level's gradient.
template <class T>
HTR_INLINE void spread_rows_body(T* __restrict fine, const T* __restrict coarse, int64_t n, int64_t w, const T* inv,
                                 bool first) {
  for (int64_t p = 0; p < n; ++p) {
    const T* __restrict c = coarse + p * w;
    T *__restrict f0 = fine + 2 * p * w, *__restrict f1 = f0 + w;
    if (inv) {
      const T s = inv[p];
      for (int64_t e = 0; e < w; ++e) f0[e] = c[e] * s;
      for (int64_t e = 0; e < w; ++e) f1[e] = first ? T(0) : c[e] * s;
    } else {
      for (int64_t e = 0; e < w; ++e) f0[e] = c[e];
      for (int64_t e = 0; e < w; ++e) f1[e] = first ? T(0) : c[e];
    }
  }
}

// out[p] = wa[p] in[ia] + wb[p] in2[ib] for p < n where mx[p] > -inf (else 0 if zero, else left):
// the levels' merge (in2 row p >> 1, in row p: pair false) and the G pyramid (in rows 2p, 2p + 1).
template <class T>
HTR_INLINE void combine_rows_body(T* out, const T* in, const T* in2, int64_t n, int64_t w, const T* wa,
                                  const T* wb, const T* mx, bool pair) {
  for (int64_t p = 0; p < n; ++p) {
    T* o = out + p * w;  // (may be in's row: the merge updates Y in place)
    if (mx[p] == -std::numeric_limits<T>::infinity()) {
      if (pair)
        for (int64_t e = 0; e < w; ++e) o[e] = T(0);
      continue;
    }
    const T *a = pair ? in + 2 * p * w : in + p * w, *b = pair ? a + w : in2 + (p >> 1) * w;
    const T x = wa[p], y = wb[p];
    for (int64_t e = 0; e < w; ++e) o[e] = x * a[e] + y * b[e];
  }
}

#ifdef HKT_CPU_AVX2
namespace avx2 {

__attribute__((target("avx2,fma"))) inline void mask_bias(float* s, int64_t ld, int64_t nr, const float* add,
                                                          const float* cm, float scale) {
  const __m256 vs = _mm256_set1_ps(scale);
  for (int64_t a = 0; a < nr; ++a) {
    float* r = s + a * ld;
    const float* ad = add + a * ld;
    for (int64_t j = 0; j < ld; j += 8)
      _mm256_storeu_ps(r + j, _mm256_add_ps(_mm256_fmadd_ps(_mm256_loadu_ps(r + j), vs, _mm256_loadu_ps(ad + j)),
                                            _mm256_loadu_ps(cm + j)));
  }
}

// The 8 lanes' max in every lane.
__attribute__((target("avx2,fma"))) inline __m256 hmax8(__m256 v) {
  v = _mm256_max_ps(v, _mm256_permute2f128_ps(v, v, 1));
  v = _mm256_max_ps(v, _mm256_shuffle_ps(v, v, 0x4E));
  return _mm256_max_ps(v, _mm256_shuffle_ps(v, v, 0xB1));
}
// ((t0 + t1) + (t2 + t3)) + ((t4 + t5) + (t6 + t7)), simd::hsum8's order, without a store.
__attribute__((target("avx2,fma"))) inline float hsum8r(__m256 v) {
  const __m256 h = _mm256_hadd_ps(v, v), q = _mm256_hadd_ps(h, h);
  return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(q), _mm256_extractf128_ps(q, 1)));
}

// One masked row at a time.
__attribute__((target("avx2,fma"))) inline void softmax_masked(float* s, int64_t ld, int64_t nr, const float* cp,
                                                               float* M, float* Z);

// Two rows at a time (their mask, max, exp and dot chains interleave).
__attribute__((target("avx2,fma"))) inline void softmax_rows(float* s, int64_t ld, int64_t nr, const Mask<float>& mk,
                                                             const float* cp, float* M, float* Z) {
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  const __m256 vs = _mm256_set1_ps(mk.scale);
  int64_t a = 0;
  for (; a + 2 <= nr; a += 2) {
    float *r0 = s + a * ld, *r1 = r0 + ld;
    const float *ad0 = mk.add + a * ld, *ad1 = ad0 + ld;
    __m256 m0 = _mm256_set1_ps(ninf), m1 = m0;
    for (int64_t j = 0; j < ld; j += 8) {
      const __m256 c = _mm256_loadu_ps(mk.cm + j);
      const __m256 t0 = _mm256_add_ps(_mm256_fmadd_ps(_mm256_loadu_ps(r0 + j), vs, _mm256_loadu_ps(ad0 + j)), c);
      const __m256 t1 = _mm256_add_ps(_mm256_fmadd_ps(_mm256_loadu_ps(r1 + j), vs, _mm256_loadu_ps(ad1 + j)), c);
      _mm256_storeu_ps(r0 + j, t0), _mm256_storeu_ps(r1 + j, t1);
      m0 = _mm256_max_ps(m0, t0), m1 = _mm256_max_ps(m1, t1);
    }
    m0 = hmax8(m0), m1 = hmax8(m1);
    const float f0 = _mm256_cvtss_f32(m0), f1 = _mm256_cvtss_f32(m1);
    if (f0 == ninf || f1 == ninf) {  // (rare: a row with no key; the rows one at a time)
      softmax_masked(r0, ld, 1, cp, M + a, Z + a), softmax_masked(r1, ld, 1, cp, M + a + 1, Z + a + 1);
      continue;
    }
    __m256 z0 = _mm256_setzero_ps(), z1 = z0;
    for (int64_t j = 0; j < ld; j += 8) {
      const __m256 c = _mm256_loadu_ps(cp + j), x0 = _mm256_loadu_ps(r0 + j), x1 = _mm256_loadu_ps(r1 + j);
      // (8 masked keys in both rows, as the correction mask gives: exp is 0, skipped)
      if (_mm256_movemask_ps(_mm256_cmp_ps(_mm256_max_ps(x0, x1), _mm256_set1_ps(ninf), _CMP_EQ_OQ)) == 0xFF) {
        _mm256_storeu_ps(r0 + j, _mm256_setzero_ps()), _mm256_storeu_ps(r1 + j, _mm256_setzero_ps());
        continue;
      }
      const __m256 p0 = simd::exp8(_mm256_sub_ps(x0, m0));
      const __m256 p1 = simd::exp8(_mm256_sub_ps(x1, m1));
      _mm256_storeu_ps(r0 + j, p0), _mm256_storeu_ps(r1 + j, p1);
      z0 = _mm256_fmadd_ps(p0, c, z0), z1 = _mm256_fmadd_ps(p1, c, z1);
    }
    M[a] = f0, Z[a] = hsum8r(z0), M[a + 1] = f1, Z[a + 1] = hsum8r(z1);
  }
  if (a < nr) mask_bias(s + a * ld, ld, nr - a, mk.add + a * ld, mk.cm, mk.scale), softmax_masked(s + a * ld, ld, nr - a, cp, M + a, Z + a);
}

__attribute__((target("avx2,fma"))) inline void softmax_masked(float* s, int64_t ld, int64_t nr, const float* cp,
                                                               float* M, float* Z) {
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t a = 0; a < nr; ++a) {
    float* r = s + a * ld;
    __m256 vm = _mm256_set1_ps(ninf);
    for (int64_t j = 0; j < ld; j += 8) vm = _mm256_max_ps(vm, _mm256_loadu_ps(r + j));
    vm = hmax8(vm);
    const float m = _mm256_cvtss_f32(vm);
    if (m == ninf) {
      std::fill_n(r, ld, 0.0f);
      continue;
    }
    __m256 z = _mm256_setzero_ps();
    for (int64_t j = 0; j < ld; j += 8) {
      const __m256 p = simd::exp8(_mm256_sub_ps(_mm256_loadu_ps(r + j), vm));
      _mm256_storeu_ps(r + j, p);
      z = _mm256_fmadd_ps(p, _mm256_loadu_ps(cp + j), z);
    }
    M[a] = m, Z[a] = hsum8r(z);
  }
}

__attribute__((target("avx2,fma"))) inline void dsoftmax_rows(float* s, float* g, int64_t ld, int64_t nr,
                                                              int64_t nrp, const int* kind, const Mask<float>& mk,
                                                              const float* cp, const float* E, const float* D,
                                                              float scale, float* dacc) {
  const __m256 vs = _mm256_set1_ps(scale), vm = _mm256_set1_ps(mk.scale);
  for (int64_t a = 0; a < nr; ++a) {
    float *r = s + a * ld, *gr = g + a * ld;
    if (E[a] == -std::numeric_limits<float>::infinity()) {
      std::fill_n(r, ld, 0.0f), std::fill_n(gr, ld, 0.0f);
      continue;
    }
    const __m256 ve = _mm256_set1_ps(E[a]), vd = _mm256_set1_ps(D[a]);
    const float* ad = mk.add + a * ld;
    for (int64_t j = 0; j < ld; j += 8) {
      const __m256 t =
          _mm256_add_ps(_mm256_fmadd_ps(_mm256_loadu_ps(r + j), vm, _mm256_loadu_ps(ad + j)), _mm256_loadu_ps(mk.cm + j));
      if (_mm256_movemask_ps(_mm256_cmp_ps(t, _mm256_set1_ps(-std::numeric_limits<float>::infinity()), _CMP_EQ_OQ)) ==
          0xFF) {  // (8 masked keys: P and dS are 0, d bias gets 0)
        _mm256_storeu_ps(r + j, _mm256_setzero_ps()), _mm256_storeu_ps(gr + j, _mm256_setzero_ps());
        continue;
      }
      const __m256 p = simd::exp8(_mm256_add_ps(t, ve));
      _mm256_storeu_ps(r + j, p);
      const __m256 ds = _mm256_mul_ps(p, _mm256_fnmadd_ps(_mm256_loadu_ps(cp + j), vd, _mm256_loadu_ps(gr + j)));
      if (dacc) {
        const int64_t i = j / nrp;
        float* acc = dacc + (kind[i] * nr + a) * nrp + (j - i * nrp);
        _mm256_storeu_ps(acc, _mm256_add_ps(_mm256_loadu_ps(acc), ds));
      }
      _mm256_storeu_ps(gr + j, _mm256_mul_ps(ds, vs));
    }
  }
}

// 8 at a time (simd::exp8), the tail with std::exp.
__attribute__((target("avx2,fma"))) inline void exp_batch(float* x, int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(x + j, simd::exp8(_mm256_loadu_ps(x + j)));
  for (; j < n; ++j) x[j] = std::exp(x[j]);
}

__attribute__((target("avx2,fma"))) inline void pair_sums(float* out, const float* in, int64_t n, const float* inv) {
  int64_t p = 0;
  for (; p + 8 <= n; p += 8) {
    // hadd gives (01, 23, 89, ab | 45, 67, cd, ef) of the 16 inputs' pair sums; reorder the 64-bit pairs.
    const __m256 h = _mm256_hadd_ps(_mm256_loadu_ps(in + 2 * p), _mm256_loadu_ps(in + 2 * p + 8));
    __m256 s = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(h), 0xD8));
    if (inv) s = _mm256_mul_ps(s, _mm256_loadu_ps(inv + p));
    _mm256_storeu_ps(out + p, s);
  }
  pair_sums_generic(out + p, in + 2 * p, n - p, inv ? inv + p : nullptr);
}

__attribute__((target("avx2,fma"))) inline void pair_rows(float* out, const float* in, int64_t n, int64_t w,
                                                          const float* inv, bool first) {
  pair_rows_body(out, in, n, w, inv, first);
}
__attribute__((target("avx2,fma"))) inline void spread_rows(float* fine, const float* coarse, int64_t n, int64_t w,
                                                            const float* inv, bool first) {
  spread_rows_body(fine, coarse, n, w, inv, first);
}
__attribute__((target("avx2,fma"))) inline void combine_rows(float* out, const float* in, const float* in2, int64_t n,
                                                             int64_t w, const float* wa, const float* wb,
                                                             const float* mx, bool pair) {
  combine_rows_body(out, in, in2, n, w, wa, wb, mx, pair);
}

}  // namespace avx2

#endif

template <class T>
inline bool use_avx2() {
#ifdef HKT_CPU_AVX2
  if constexpr (attn_detail::kIsF32<T>) return simd::cpu_has_avx2_fma();
#endif
  return false;
}

template <class T>
void softmax_rows(T* s, int64_t ld, int64_t nr, const Mask<T>& mk, const T* cp, T* M, T* Z) {
#ifdef HKT_CPU_AVX2
  if constexpr (attn_detail::kIsF32<T>)
    if (use_avx2<T>()) return avx2::softmax_rows(s, ld, nr, mk, cp, M, Z);
#endif
  softmax_rows_generic(s, ld, nr, mk, cp, M, Z);
}
template <class T>
void dsoftmax_rows(T* s, T* g, int64_t ld, int64_t nr, int64_t nrp, const int* kind, const Mask<T>& mk, const T* cp,
                   const T* E, const T* D, T scale, T* dacc) {
#ifdef HKT_CPU_AVX2
  if constexpr (attn_detail::kIsF32<T>)
    if (use_avx2<T>()) return avx2::dsoftmax_rows(s, g, ld, nr, nrp, kind, mk, cp, E, D, scale, dacc);
#endif
  dsoftmax_rows_generic(s, g, ld, nr, nrp, kind, mk, cp, E, D, scale, dacc);
}
template <class T>
void exp_batch(T* x, int64_t n) {
#ifdef HKT_CPU_AVX2
  if constexpr (attn_detail::kIsF32<T>)
    if (use_avx2<T>()) return avx2::exp_batch(x, n);
#endif
  exp_batch_generic(x, n);
}
template <class T>
void pair_sums(T* out, const T* in, int64_t n, const T* inv) {
#ifdef HKT_CPU_AVX2
  if constexpr (attn_detail::kIsF32<T>)
    if (use_avx2<T>()) return avx2::pair_sums(out, in, n, inv);
#endif
  pair_sums_generic(out, in, n, inv);
}
template <class T>
void pair_rows(T* out, const T* in, int64_t n, int64_t w, const T* inv, bool first) {
#ifdef HKT_CPU_AVX2
  if constexpr (attn_detail::kIsF32<T>)
    if (use_avx2<T>()) return avx2::pair_rows(out, in, n, w, inv, first);
#endif
  pair_rows_body(out, in, n, w, inv, first);
}
template <class T>
void spread_rows(T* fine, const T* coarse, int64_t n, int64_t w, const T* inv, bool first) {
#ifdef HKT_CPU_AVX2
  if constexpr (attn_detail::kIsF32<T>)
    if (use_avx2<T>()) return avx2::spread_rows(fine, coarse, n, w, inv, first);
#endif
  spread_rows_body(fine, coarse, n, w, inv, first);
}
template <class T>
void combine_rows(T* out, const T* in, const T* in2, int64_t n, int64_t w, const T* wa, const T* wb, const T* mx,
                  bool pair) {
#ifdef HKT_CPU_AVX2
  if constexpr (attn_detail::kIsF32<T>)
    if (use_avx2<T>()) return avx2::combine_rows(out, in, in2, n, w, wa, wb, mx, pair);
#endif
  combine_rows_body(out, in, in2, n, w, wa, wb, mx, pair);
}

}  // namespace hkt::cpu::htr
