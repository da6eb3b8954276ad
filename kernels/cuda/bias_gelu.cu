// bias_gelu on the GPU, as kernels/cpu/bias_gelu.cpp: one thread per element of
// contiguous x [rows, C], with the same functors (hkt/kernels/elementwise_defs.hpp).
//   y = gelu(x + b[c]),   dx = g * gelu'(x + b[c])
#include "hkt/kernels/elementwise_defs.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/backends.hpp"

namespace hkt::cuda {
namespace {

template <class T, class Gelu>
__global__ void bias_gelu_fwd_kernel(const T* x, const T* b, T* y, int64_t C, int64_t n) {
  HKT_CUDA_LOOP(e, n) { y[e] = Gelu::f(x[e] + b[e % C]); }
}

template <class T, class Gelu>
__global__ void bias_gelu_bwd_kernel(const T* x, const T* b, const T* g, T* dx, int64_t C, int64_t n) {
  HKT_CUDA_LOOP(e, n) {
    const T u = x[e] + b[e % C];
    dx[e] = g[e] * Gelu::df(u, Gelu::f(u));
  }
}

}  // namespace

template <class T>
void bias_gelu_forward(const void* xv, const void* bv, void* yv, int64_t rows, int64_t C, bool approximate) {
  const int64_t n = rows * C;
  if (n <= 0) return;
  const T *x = static_cast<const T*>(xv), *b = static_cast<const T*>(bv);
  T* y = static_cast<T*>(yv);
  if (approximate) {
    HKT_LAUNCH(blocks_for(n), kThreads, 0, bias_gelu_fwd_kernel<T, ew::GeluTanh>)(x, b, y, C, n);
  } else {
    HKT_LAUNCH(blocks_for(n), kThreads, 0, bias_gelu_fwd_kernel<T, ew::GeluErf>)(x, b, y, C, n);
  }
  CUDA_CHECK_LAUNCH();
}

template <class T>
void bias_gelu_backward(const void* xv, const void* bv, const void* gv, void* dxv, int64_t rows, int64_t C,
                        bool approximate) {
  const int64_t n = rows * C;
  if (n <= 0) return;
  const T *x = static_cast<const T*>(xv), *b = static_cast<const T*>(bv), *g = static_cast<const T*>(gv);
  T* dx = static_cast<T*>(dxv);
  if (approximate) {
    HKT_LAUNCH(blocks_for(n), kThreads, 0, bias_gelu_bwd_kernel<T, ew::GeluTanh>)(x, b, g, dx, C, n);
  } else {
    HKT_LAUNCH(blocks_for(n), kThreads, 0, bias_gelu_bwd_kernel<T, ew::GeluErf>)(x, b, g, dx, C, n);
  }
  CUDA_CHECK_LAUNCH();
}

// The op list's kernels, registered for its CUDA dtypes (kernels/backends.hpp).
HKT_CUDA_KERNEL_AS(bias_gelu, bias_gelu_forward<T>)
HKT_CUDA_KERNEL(bias_gelu_backward)

}  // namespace hkt::cuda
