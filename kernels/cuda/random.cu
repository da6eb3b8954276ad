// Random tensors and dropout masks on the GPU. Element i uses Philox-4x32-10
// counter (first + i) with the generator's seed as key: the function of
// core/include/hkt/core/random.hpp, compiled for the device, so a CUDA
// tensor holds the same bits as a CPU one made from the same generator state.
#include "hkt/core/random.hpp"
#include "hkt/kernels/shared_rules.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/backends.hpp"

namespace hkt::cuda {
namespace {

using U4 = PhiloxBlock;
__device__ inline U4 philox4x32(uint64_t counter_lo, uint64_t counter_hi, uint64_t key) {
  return philox4x32_block(counter_lo, counter_hi, key);
}
// Uniform in (0, 1], the CPU's function.
__device__ inline double unit(uint32_t x) { return uint_to_unit(x); }

template <class T>
__global__ void uniform_kernel(T* out, int64_t n, uint64_t seed, uint64_t first, double lo, double hi) {
  HKT_CUDA_LOOP(i, n) {
    const U4 r = philox4x32(rules::philox_counter(first, i), 0, seed);
    const double u = rules::unit_interval(r.x);
    out[i] = static_cast<T>(lo + (hi - lo) * u);
  }
}
template <class T>
__global__ void normal_kernel(T* out, int64_t n, uint64_t seed, uint64_t first, double mean, double std) {
  HKT_CUDA_LOOP(i, n) {
    const U4 r = philox4x32(rules::philox_counter(first, i), 0, seed);
    const double u1 = unit(r.x), u2 = unit(r.y);
    out[i] = static_cast<T>(mean + std * ::sqrt(-2.0 * ::log(u1)) * ::cos(6.283185307179586 * u2));
  }
}
template <class T>
__global__ void dropout_kernel(T* out, int64_t n, uint64_t seed, uint64_t first, double p) {
  const T scale = static_cast<T>(1.0 / (1.0 - p));
  HKT_CUDA_LOOP(i, n) {
    const U4 r = philox4x32(rules::philox_counter(first, i), 0, seed);
    const double u = rules::unit_interval(r.x);
    out[i] = u >= p ? scale : T(0);
  }
}

}  // namespace

template <class T>
void rand_uniform(void* out, int64_t n, uint64_t seed, uint64_t first, double lo, double hi) {
  if (n == 0) return;
  HKT_LAUNCH(blocks_for(n), kThreads, 0, uniform_kernel<T>)(static_cast<T*>(out), n, seed, first, lo, hi);
  CUDA_CHECK_LAUNCH();
}
template <class T>
void rand_normal(void* out, int64_t n, uint64_t seed, uint64_t first, double mean, double std) {
  if (n == 0) return;
  HKT_LAUNCH(blocks_for(n), kThreads, 0, normal_kernel<T>)(static_cast<T*>(out), n, seed, first, mean, std);
  CUDA_CHECK_LAUNCH();
}
template <class T>
void dropout_mask(void* out, int64_t n, uint64_t seed, uint64_t first, double p) {
  if (n == 0) return;
  HKT_LAUNCH(blocks_for(n), kThreads, 0, dropout_kernel<T>)(static_cast<T*>(out), n, seed, first, p);
  CUDA_CHECK_LAUNCH();
}

// The op list's kernels, registered for its CUDA dtypes (kernels/backends.hpp).
HKT_CUDA_KERNEL_AS(uniform, rand_uniform<T>)
HKT_CUDA_KERNEL_AS(normal, rand_normal<T>)
HKT_CUDA_KERNEL_AS(dropout, dropout_mask<T>)

}  // namespace hkt::cuda
