// bias_gelu CPU kernels: y = gelu(x + b) over contiguous x [rows, C], b [C],
// and dx = g * gelu'(x + b). Elementwise (no reduction), so the bits do not
// depend on the thread count; the functors are the CUDA kernel's
// (hkt/kernels/elementwise_defs.hpp).
#include <cstdint>

#include "hkt/kernels/elementwise_defs.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/backends.hpp"

namespace hkt::cpu {

template <class T, class Gelu>
void bias_gelu_forward(const T* x, const T* b, T* y, int64_t rows, int64_t C) {
  parallel_for(0, rows * C, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) y[i] = Gelu::f(x[i] + b[i % C]);
  });
}

template <class T, class Gelu>
void bias_gelu_grad(const T* x, const T* b, const T* g, T* dx, int64_t rows, int64_t C) {
  parallel_for(0, rows * C, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const T u = x[i] + b[i % C];
      dx[i] = g[i] * Gelu::df(u, Gelu::f(u));
    }
  });
}

// The op list's kernels (hkt/kernels/op_list.hpp's signatures), registered for its CPU dtypes.
using kernels::buf;
template <class T>
void bias_gelu(const void* x, const void* b, void* y, int64_t rows, int64_t C, bool approximate) {
  if (approximate) bias_gelu_forward<T, ew::GeluTanh>(buf<T>(x), buf<T>(b), buf<T>(y), rows, C);
  else bias_gelu_forward<T, ew::GeluErf>(buf<T>(x), buf<T>(b), buf<T>(y), rows, C);
}
template <class T>
void bias_gelu_backward(const void* x, const void* b, const void* g, void* dx, int64_t rows, int64_t C,
                        bool approximate) {
  if (approximate) bias_gelu_grad<T, ew::GeluTanh>(buf<T>(x), buf<T>(b), buf<T>(g), buf<T>(dx), rows, C);
  else bias_gelu_grad<T, ew::GeluErf>(buf<T>(x), buf<T>(b), buf<T>(g), buf<T>(dx), rows, C);
}
HKT_CPU_KERNEL(bias_gelu)
HKT_CPU_KERNEL(bias_gelu_backward)

}  // namespace hkt::cpu
