// CPU kernels for random tensors: element i uses Philox counter (first + i),
// so results do not depend on the thread count. The dropout mask has an AVX2
// path (eight counters per register, chosen at run time) that draws the same
// bits as the scalar one: element i is kept when its word x satisfies
// x / 2^32 >= p, i.e. x >= ceil(p 2^32), an exact integer compare.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "hkt/core/random.hpp"
#include "hkt/kernels/shared_rules.hpp"
#include "kernels/cpu/avx2_math.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/backends.hpp"

namespace hkt::cpu {

// Uniform in [lo, hi).
template <class T>
void rand_uniform(T* out, int64_t n, uint64_t seed, uint64_t first, double lo, double hi) {
  parallel_for(0, n, kElementwiseGrain, [&](int64_t a, int64_t b) {
    for (int64_t i = a; i < b; ++i) {
      const auto r = philox4x32(rules::philox_counter(first, i), 0, seed);
      const double u = rules::unit_interval(r[0]);
      out[i] = static_cast<T>(lo + (hi - lo) * u);
    }
  });
}

// Normal(mean, std) by Box-Muller.
template <class T>
void rand_normal(T* out, int64_t n, uint64_t seed, uint64_t first, double mean, double std) {
  parallel_for(0, n, kElementwiseGrain, [&](int64_t a, int64_t b) {
    for (int64_t i = a; i < b; ++i) {
      const auto r = philox4x32(rules::philox_counter(first, i), 0, seed);
      const double u1 = uint_to_unit(r[0]), u2 = uint_to_unit(r[1]);
      out[i] = static_cast<T>(mean + std * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
    }
  });
}

#ifdef HKT_CPU_AVX2
// Multiplies the eight 32-bit lanes of a by m (broadcast): the low and high words.
__attribute__((target("avx2"))) inline void mulhilo8(__m256i a, __m256i m, __m256i& lo, __m256i& hi) {
  const __m256i even = _mm256_mul_epu32(a, m), odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
  lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

// The first word of Philox-4x32-10 (philox4x32_block) for the counters first + i, i in [a, a + 8).
__attribute__((target("avx2"))) inline __m256i philox_x8(uint64_t first, int64_t a, uint64_t key) {
  alignas(32) uint32_t lo[8], hi[8];
  for (int j = 0; j < 8; ++j) {
    const uint64_t c = rules::philox_counter(first, a + j);
    lo[j] = static_cast<uint32_t>(c), hi[j] = static_cast<uint32_t>(c >> 32);
  }
  __m256i c0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo));
  __m256i c1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi));
  __m256i c2 = _mm256_setzero_si256(), c3 = _mm256_setzero_si256();
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(0xD2511F53u)), m1 = _mm256_set1_epi32(static_cast<int>(0xCD9E8D57u));
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int r = 0; r < 10; ++r) {
    __m256i lo0, hi0, lo1, hi1;
    mulhilo8(c0, m0, lo0, hi0);
    mulhilo8(c2, m1, lo1, hi1);
    c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32(static_cast<int>(k0)));
    c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32(static_cast<int>(k1)));
    c1 = lo1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c0;
}

// out[i] = x_i >= keep_from ? scale : 0 for i in [a, b), eight at a time; the tail by the caller.
template <class T>
__attribute__((target("avx2"))) int64_t dropout_avx2(T* out, int64_t a, int64_t b, uint64_t seed, uint64_t first,
                                                      uint32_t keep_from, T scale) {
  const __m256i from = _mm256_set1_epi32(static_cast<int>(keep_from));
  for (; a + 8 <= b; a += 8) {
    const __m256i x = philox_x8(first, a, seed);
    const __m256i keep = _mm256_cmpeq_epi32(_mm256_max_epu32(x, from), x);  // x >= keep_from, unsigned
    if constexpr (sizeof(T) == 4) {
      _mm256_storeu_ps(reinterpret_cast<float*>(out + a),
                       _mm256_and_ps(_mm256_castsi256_ps(keep), _mm256_set1_ps(static_cast<float>(scale))));
    } else {
      alignas(32) int32_t k[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(k), keep);
      for (int j = 0; j < 8; ++j) out[a + j] = k[j] ? scale : T(0);
    }
  }
  return a;
}
#endif

// Bernoulli keep-mask scaled for inverted dropout: out = (u >= p) / (1 - p).
template <class T>
void dropout_mask(T* out, int64_t n, uint64_t seed, uint64_t first, double p) {
  const T scale = static_cast<T>(1.0 / (1.0 - p));
  // u = x / 2^32 exactly (rules::unit_interval), so u >= p <=> x >= ceil(p 2^32); 2^32 keeps none.
  const double from = std::ceil(p * 4294967296.0);
  parallel_for(0, n, kElementwiseGrain, [&](int64_t a, int64_t b) {
#ifdef HKT_CPU_AVX2
    if (from < 4294967296.0 && simd::cpu_has_avx2_fma())
      a = dropout_avx2<T>(out, a, b, seed, first, static_cast<uint32_t>(std::max(from, 0.0)), scale);
#endif
    for (int64_t i = a; i < b; ++i) {
      const auto r = philox4x32(rules::philox_counter(first, i), 0, seed);
      const double u = rules::unit_interval(r[0]);
      out[i] = u >= p ? scale : T(0);
    }
  });
}

// The op list's kernels (hkt/kernels/op_list.hpp's signatures), registered for its CPU dtypes.
using kernels::buf;
template <class T>
void uniform(void* o, int64_t n, uint64_t seed, uint64_t first, double lo, double hi) {
  rand_uniform<T>(buf<T>(o), n, seed, first, lo, hi);
}
template <class T>
void normal(void* o, int64_t n, uint64_t seed, uint64_t first, double mean, double std) {
  rand_normal<T>(buf<T>(o), n, seed, first, mean, std);
}
template <class T>
void dropout(void* o, int64_t n, uint64_t seed, uint64_t first, double p) {
  dropout_mask<T>(buf<T>(o), n, seed, first, p);
}
HKT_CPU_KERNEL(uniform)
HKT_CPU_KERNEL(normal)
HKT_CPU_KERNEL(dropout)

}  // namespace hkt::cpu
