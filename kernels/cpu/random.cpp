// CPU kernels for random tensors: element i uses Philox counter (first + i),
// so results do not depend on the thread count.
#include <cmath>
#include <cstdint>

#include "hkt/core/random.hpp"
#include "hkt/kernels/shared_rules.hpp"
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

// Bernoulli keep-mask scaled for inverted dropout: out = (u >= p) / (1 - p).
template <class T>
void dropout_mask(T* out, int64_t n, uint64_t seed, uint64_t first, double p) {
  const T scale = static_cast<T>(1.0 / (1.0 - p));
  parallel_for(0, n, kElementwiseGrain, [&](int64_t a, int64_t b) {
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
