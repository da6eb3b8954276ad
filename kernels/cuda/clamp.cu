// clamp on the GPU, as kernels/cpu/clamp.cpp: one thread per element, the same
// functors (hkt/kernels/elementwise_defs.hpp), the bounds in x's dtype.
//   y = min(max(x, lo), hi),   gx = g where lo <= x <= hi, else 0
#include "hkt/kernels/elementwise_defs.hpp"
#include "kernels/backends.hpp"
#include "kernels/cuda/common.cuh"

namespace hkt::cuda {
namespace {

template <class T>
__global__ void clamp_kernel(const T* x, T* y, int64_t n, StridedIndex<2> ix, T lo, T hi) {
  HKT_CUDA_LOOP(i, n) {
    int64_t off[2];
    ix.offsets(i, off);
    y[off[1]] = ew::Minimum::f(ew::Maximum::f(x[off[0]], lo), hi);
  }
}
template <class T>
__global__ void clamp_grad_kernel(const T* x, const T* g, T* gx, int64_t n, T lo, T hi) {
  HKT_CUDA_LOOP(i, n) gx[i] = g[i] * static_cast<T>(ew::Ge::f(x[i], lo) && ew::Le::f(x[i], hi));
}

}  // namespace

template <class T>
void clamp(const void* x, const Strides& xs, void* y, const Shape& shape, double lo, double hi) {
  const int64_t n = numel_of(shape);
  if (n == 0) return;
  const Strides ys = contiguous_strides(shape);
  const Strides* st[2] = {&xs, &ys};
  const auto ix = make_index<2>(shape, st, "clamp");
  HKT_LAUNCH(blocks_for(n), kThreads, 0, clamp_kernel<T>)(static_cast<const T*>(x), static_cast<T*>(y), n, ix,
                                                          static_cast<T>(lo), static_cast<T>(hi));
  CUDA_CHECK_LAUNCH();
}

template <class T>
void clamp_backward(const void* x, const void* g, void* gx, int64_t n, double lo, double hi) {
  if (n == 0) return;
  HKT_LAUNCH(blocks_for(n), kThreads, 0, clamp_grad_kernel<T>)(static_cast<const T*>(x), static_cast<const T*>(g),
                                                               static_cast<T*>(gx), n, static_cast<T>(lo),
                                                               static_cast<T>(hi));
  CUDA_CHECK_LAUNCH();
}

HKT_CUDA_KERNEL(clamp)
HKT_CUDA_KERNEL(clamp_backward)

}  // namespace hkt::cuda
