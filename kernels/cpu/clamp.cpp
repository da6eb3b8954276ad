// clamp on the CPU (sig::Clamp, sig::ClampGrad): y = min(max(x, lo), hi) and
// gx = g where lo <= x <= hi, with the bounds in x's dtype and the arithmetic
// of the elementwise functors (hkt/kernels/elementwise_defs.hpp), which the
// CUDA kernels share. Elementwise: the bits do not depend on the thread count.
#include "hkt/kernels/elementwise_defs.hpp"
#include "kernels/backends.hpp"
#include "kernels/cpu/loops.hpp"

namespace hkt::cpu {

template <class T>
void clamp(const void* xv, const Strides& xs, void* yv, const Shape& shape, double lo, double hi) {
  const T* x = kernels::buf<T>(xv);
  T* y = kernels::buf<T>(yv);
  const T l = static_cast<T>(lo), h = static_cast<T>(hi);
  parallel_runs<2>(shape, {xs, contiguous_strides(shape)}, [&](auto off, int64_t n, auto st) {
    for (int64_t i = 0; i < n; ++i)
      y[off[1] + i * st[1]] = ew::Minimum::f(ew::Maximum::f(x[off[0] + i * st[0]], l), h);
  });
}

template <class T>
void clamp_backward(const void* xv, const void* gv, void* gxv, int64_t n, double lo, double hi) {
  const T *x = kernels::buf<T>(xv), *g = kernels::buf<T>(gv);
  T* gx = kernels::buf<T>(gxv);
  const T l = static_cast<T>(lo), h = static_cast<T>(hi);
  parallel_for(0, n, kElementwiseGrain, [&](int64_t a, int64_t b) {
    for (int64_t i = a; i < b; ++i) gx[i] = g[i] * static_cast<T>(ew::Ge::f(x[i], l) && ew::Le::f(x[i], h));
  });
}

HKT_CPU_KERNEL(clamp)
HKT_CPU_KERNEL(clamp_backward)

}  // namespace hkt::cpu
